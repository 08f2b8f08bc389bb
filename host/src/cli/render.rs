//! `tern render`: the operator's pure core, offline. Gslb manifests plus a description of this cluster
//! and of what its peers publish in; the DNSEndpoints the operator would write out.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use serde::Deserialize;

use crate::api::Gslb;
use crate::engine::{EngineLimits, StrategyEngine, StrategyRegistry};
use crate::reconcile::{LocalHost, PeerView, ReconcileInputs, StrategyRef, desired_dns_endpoint, plan, render};

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Files holding Gslb manifests (k8gb.io or k8gb.absa.oss; multi-document YAML is fine).
    #[arg(required = true)]
    gslbs: Vec<PathBuf>,
    /// This cluster and its peers (see examples/render/cluster.yaml).
    #[arg(long)]
    cluster: PathBuf,
    /// Also load every `NAME.wasm` in this directory as strategy NAME.
    #[arg(long, env = "TERN_STRATEGY_DIR")]
    dir: Option<PathBuf>,
}

/// The `--cluster` file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClusterFile {
    /// This cluster's geo tag (CLUSTER_GEO_TAG).
    geo_tag: String,
    /// This cluster's view of each host; a host not listed is NotFound.
    #[serde(default)]
    hosts: BTreeMap<String, LocalHost>,
    /// Hosts of Gslbs in referenced mode, by Gslb name (embedded ones come from spec.ingress).
    #[serde(default)]
    servers: BTreeMap<String, Vec<String>>,
    /// What each peer publishes as localtargets: geo tag -> host -> addresses.
    #[serde(default)]
    peers: BTreeMap<String, BTreeMap<String, Vec<std::net::IpAddr>>>,
}

pub fn run(args: RenderArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.cluster).with_context(|| format!("cannot read {}", args.cluster.display()))?;
    let cluster: ClusterFile = serde_yaml::from_str(&text).with_context(|| format!("{} is not a valid cluster file", args.cluster.display()))?;
    let mut peers = PeerView::default();
    for (geo_tag, hosts) in &cluster.peers {
        for (host, addresses) in hosts {
            peers.insert(host, geo_tag, addresses.clone());
        }
    }
    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default())?)?;
    if let Some(dir) = &args.dir {
        drop(crate::engine::watch::DirectoryWatcher::start(registry.clone(), dir, Default::default())?);
    }

    let mut failures = 0;
    for path in &args.gslbs {
        for gslb in read_gslbs(path)? {
            let name = gslb.metadata.name.clone().unwrap_or_default();
            let key = format!("{}/{name}", gslb.metadata.namespace.as_deref().unwrap_or("default"));
            let plan = plan(&gslb.spec.strategy).with_context(|| format!("Gslb {key}"))?;
            let hosts = gslb_hosts(&gslb, &cluster).with_context(|| format!("Gslb {key}"))?;
            let views: BTreeMap<String, LocalHost> = hosts
                .into_iter()
                .map(|h| {
                    let view = cluster.hosts.get(&h).cloned().unwrap_or(LocalHost { health: crate::api::HealthStatus::NotFound, addresses: vec![] });
                    (h, view)
                })
                .collect();
            let inputs = ReconcileInputs { gslb_key: &key, local_geo_tag: &cluster.geo_tag, hosts: &views, peers: &peers, previous: &[] };
            let rendered = render(&plan, &StrategyRef::Named(plan.strategy.clone()), inputs, registry.as_ref());
            println!("---");
            for outcome in &rendered.outcomes {
                match &outcome.result {
                    Ok(d) => {
                        let targets: Vec<String> = d.targets.iter().map(|t| t.address.to_string()).collect();
                        println!("# {} [{}] -> [{}] ttl {}: {}", outcome.host, plan.strategy, targets.join(", "), d.ttl_seconds, d.reason);
                    }
                    Err(e) => {
                        failures += 1;
                        println!("# {} [{}] FAILED ({}): {e}", outcome.host, plan.strategy, e.kind());
                    }
                }
            }
            // Offline there is no uid, so no owner reference: the operator adds it in the cluster.
            print!("{}", serde_yaml::to_string(&desired_dns_endpoint(&gslb, rendered.endpoints))?);
        }
    }
    if failures > 0 {
        bail!("{failures} host(s) could not be decided; see the FAILED lines above");
    }
    Ok(())
}

/// Every Gslb in `path`; the legacy group is read as the canonical one (same fields).
fn read_gslbs(path: &PathBuf) -> anyhow::Result<Vec<Gslb>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut gslbs = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(&text).enumerate() {
        let mut value = serde_yaml::Value::deserialize(document).with_context(|| format!("{}: document {}", path.display(), index + 1))?;
        if value.is_null() || value.get("kind").and_then(|k| k.as_str()) != Some("Gslb") {
            continue;
        }
        match value.get("apiVersion").and_then(|v| v.as_str()) {
            Some("k8gb.io/v1beta1") => {}
            Some("k8gb.absa.oss/v1beta1") => value["apiVersion"] = "k8gb.io/v1beta1".into(),
            other => bail!("{}: document {}: unsupported Gslb apiVersion {other:?}", path.display(), index + 1),
        }
        let gslb: Gslb = serde_yaml::from_value(value).with_context(|| format!("{}: document {} is not a valid Gslb", path.display(), index + 1))?;
        gslbs.push(gslb);
    }
    Ok(gslbs)
}

/// The Gslb's hosts: its embedded ingress rules, else the cluster file's `servers` entry.
fn gslb_hosts(gslb: &Gslb, cluster: &ClusterFile) -> anyhow::Result<Vec<String>> {
    let embedded: Vec<String> = gslb
        .spec
        .ingress
        .iter()
        .flat_map(|i| i.rules.iter().flatten())
        .filter_map(|r| r.host.clone())
        .collect();
    if !embedded.is_empty() {
        return Ok(embedded);
    }
    let name = gslb.metadata.name.as_deref().unwrap_or_default();
    match cluster.servers.get(name) {
        Some(hosts) => Ok(hosts.clone()),
        None => bail!("cannot tell its hosts: it has no spec.ingress rules; list them under `servers: {{{name}: [...]}}` in the cluster file"),
    }
}
