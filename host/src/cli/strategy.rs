//! `tern strategy`: list the strategies, evaluate one on a request file, build a guest crate.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::engine::watch::{DirectoryWatcher, WatchOptions};
use crate::engine::{EngineLimits, RegistryEvent, StrategyEngine, StrategyRegistry, StrategyRequest};
use crate::strategy_build::{BuildRequest, build_components};

#[derive(Debug, Subcommand)]
pub enum StrategyCommand {
    /// List the strategies: name, source, digest.
    List {
        /// Also load every `NAME.wasm` in this directory, as the operator does.
        #[arg(long, env = "TERN_STRATEGY_DIR")]
        dir: Option<PathBuf>,
    },
    /// Decide a request with a strategy and print the decision as JSON (a dry run for CI).
    Eval(EvalArgs),
    /// Build a strategy crate (or workspace) into WebAssembly components.
    Build {
        /// The crate or workspace directory.
        #[arg(default_value = ".")]
        path: PathBuf,
        /// Where the `<strategy>.wasm` files go.
        #[arg(long, default_value = "dist")]
        out: PathBuf,
        /// Only these packages (default: every cdylib package).
        #[arg(short, long = "package")]
        packages: Vec<String>,
        /// Cargo's target directory (default: `<path>/target`).
        #[arg(long)]
        target_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A registered strategy: a built-in (roundRobin, weighted, failover, geoip) or one from --dir.
    #[arg(long, conflicts_with = "module", required_unless_present = "module")]
    strategy: Option<String>,
    /// A strategy component file to evaluate directly.
    #[arg(long)]
    module: Option<PathBuf>,
    /// The request, as YAML or JSON (see examples/requests/).
    #[arg(long)]
    request: PathBuf,
    /// Also load every `NAME.wasm` in this directory.
    #[arg(long, env = "TERN_STRATEGY_DIR")]
    dir: Option<PathBuf>,
}

pub fn run(command: StrategyCommand) -> anyhow::Result<()> {
    match command {
        StrategyCommand::List { dir } => list(dir),
        StrategyCommand::Eval(args) => eval(args),
        StrategyCommand::Build { path, out, packages, target_dir } => {
            let built = build_components(&BuildRequest { crate_dir: path, packages, out_dir: out, target_dir })?;
            for component in built {
                let digest = crate::engine::Digest::of(&component.bytes);
                println!("{}\t{}\t{} bytes\tsha256:{}", component.strategy, component.path.display(), component.bytes.len(), digest);
            }
            Ok(())
        }
    }
}

/// The registry with the built-ins, plus `dir`'s strategies when given (reporting any it rejects).
fn registry(dir: Option<&PathBuf>) -> anyhow::Result<Arc<StrategyRegistry>> {
    let engine = StrategyEngine::new(EngineLimits::default())?;
    let registry = StrategyRegistry::with_builtins(engine)?;
    if let Some(dir) = dir {
        let events = registry.subscribe();
        drop(DirectoryWatcher::start(registry.clone(), dir, WatchOptions::default())?);
        for event in events.try_iter() {
            if let RegistryEvent::Rejected { name, source, error } = event {
                eprintln!("warning: strategy '{name}' ({source}) not loaded: {error}");
            }
        }
    }
    Ok(registry)
}

#[derive(Serialize)]
struct ListedStrategy {
    name: String,
    source: String,
    digest: String,
    bytes: usize,
}

fn list(dir: Option<PathBuf>) -> anyhow::Result<()> {
    let registry = registry(dir.as_ref())?;
    println!("{:<24} {:<12} {:<16} SOURCE", "NAME", "BYTES", "DIGEST");
    for s in registry.list() {
        let listed = ListedStrategy {
            name: s.name.clone(),
            source: s.source.to_string(),
            digest: format!("sha256:{}", s.compiled.digest().short()),
            bytes: s.compiled.size(),
        };
        println!("{:<24} {:<12} {:<16} {}", listed.name, listed.bytes, listed.digest, listed.source);
    }
    Ok(())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EvalOutput<'a> {
    strategy: &'a str,
    #[serde(flatten)]
    decision: crate::engine::Decision,
}

fn eval(args: EvalArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.request)
        .with_context(|| format!("cannot read the request {}", args.request.display()))?;
    let request: StrategyRequest = serde_yaml::from_str(&text)
        .with_context(|| format!("{} is not a valid request", args.request.display()))?;
    let registry = registry(args.dir.as_ref())?;
    let (label, decision) = match (&args.strategy, &args.module) {
        (Some(name), _) => (name.clone(), registry.decide(name, &request)),
        (None, Some(path)) => {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            let compiled = registry.compile(&bytes).with_context(|| format!("{} is not a usable strategy", path.display()))?;
            (path.display().to_string(), registry.engine().decide(&compiled, &request))
        }
        (None, None) => bail!("give --strategy NAME or --module FILE"),
    };
    let decision = decision.with_context(|| format!("strategy {label} could not decide"))?;
    println!("{}", serde_json::to_string_pretty(&EvalOutput { strategy: &label, decision })?);
    Ok(())
}
