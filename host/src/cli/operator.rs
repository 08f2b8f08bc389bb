//! `tern operator`: the Gslb controller against the cluster's API server.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;

use crate::config::OperatorConfig;
use crate::engine::watch::{DirectoryWatcher, WatchOptions};
use crate::engine::{EngineLimits, StrategyEngine, StrategyRegistry};
use crate::operator::{Context, run as run_controller};
use crate::telemetry::{Metrics, serve};

#[derive(Debug, Args)]
pub struct OperatorArgs {
    /// A directory of `NAME.wasm` strategies, watched for changes (the chart mounts a ConfigMap here).
    #[arg(long, env = "TERN_STRATEGY_DIR")]
    strategy_dir: Option<PathBuf>,
}

pub fn run(args: OperatorArgs) -> anyhow::Result<()> {
    let config = OperatorConfig::from_env()?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default())?)?;
    let _watcher = match &args.strategy_dir {
        Some(dir) => Some(DirectoryWatcher::start(registry.clone(), dir, WatchOptions::default())?),
        None => None,
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let client = kube::Client::try_default().await.context("cannot reach the Kubernetes API server (kubeconfig or in-cluster)")?;
        let metrics = Metrics::new();
        let listener = tokio::net::TcpListener::bind(config.metrics_address)
            .await
            .with_context(|| format!("cannot listen on {} for /metrics, /healthz and /readyz (set METRICS_ADDRESS)", config.metrics_address))?;
        tokio::spawn(serve(listener, metrics.clone()));
        tracing::info!(geo_tag = %config.geo_tag, peers = ?config.peer_geo_tags, metrics = %config.metrics_address, "tern operator starting");
        run_controller(Arc::new(Context::new(client, config, registry, metrics))).await;
        tracing::info!("tern operator stopped");
        anyhow::Ok(())
    })
}
