//! Pure decisions: a Gslb, this cluster's view and the peers' view in; the DNSEndpoint and the status
//! out. No I/O here: the operator, `tern render` and the playground all call the same code.

pub mod names;
pub mod records;
pub mod view;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::api::{DNSEndpoint, DNSEndpointSpec, Endpoint, Gslb, HealthStatus, StrategySpec};
use crate::engine::{CallError, ClusterView, CompiledStrategy, Decision, Health, StrategyRegistry, StrategyRequest};

pub use view::{LocalHost, PeerView};

/// The TTL of application records when the Gslb sets none (or 0), as in k8gb.
pub const DEFAULT_TTL_SECONDS: u32 = 30;
/// The largest TTL a Gslb may ask for.
pub const MAX_TTL_SECONDS: i32 = 86_400;
/// The label (and annotation) that selects DNSEndpoints for the local DNS server, in both groups.
pub const DNSTYPE_LABELS: [&str; 2] = ["k8gb.io/dnstype", "k8gb.absa.oss/dnstype"];

/// Why a Gslb's strategy cannot be used as written; each names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("spec.strategy.weight: the {0} strategy takes no weights (use roundRobin, weighted or a custom strategy)")]
    WeightsNotAllowed(String),
    #[error("spec.strategy.weight[{tag}]: {weight} is outside 0..1000")]
    WeightOutOfRange { tag: String, weight: i32 },
    #[error("spec.strategy.dnsTtlSeconds: {0} is outside 0..{MAX_TTL_SECONDS}")]
    TtlOutOfRange(i32),
    #[error("spec.strategy.type: must not be empty")]
    EmptyType,
}

/// A Gslb's strategy settings, checked and resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyPlan {
    /// The strategy that decides: k8gb's `roundRobin` with weights is `weighted`.
    pub strategy: String,
    /// The `strategy` label on host records: the Gslb's own type, as k8gb writes it.
    pub label: String,
    pub ttl_seconds: u32,
    pub primary_geo_tag: Option<String>,
    pub weights: BTreeMap<String, u32>,
    pub settings: BTreeMap<String, String>,
}

/// Checks `spec` and resolves it into a plan.
pub fn plan(spec: &StrategySpec) -> Result<StrategyPlan, SpecError> {
    if spec.type_.is_empty() {
        return Err(SpecError::EmptyType);
    }
    let raw_weights = spec.weight.clone().unwrap_or_default();
    if !raw_weights.is_empty() && matches!(spec.type_.as_str(), "failover" | "geoip") {
        return Err(SpecError::WeightsNotAllowed(spec.type_.clone()));
    }
    let mut weights = BTreeMap::new();
    for (tag, weight) in raw_weights {
        match u32::try_from(weight) {
            Ok(w) if w <= 1000 => weights.insert(tag, w),
            _ => return Err(SpecError::WeightOutOfRange { tag, weight }),
        };
    }
    let ttl_seconds = match spec.dns_ttl_seconds.unwrap_or(0) {
        0 => DEFAULT_TTL_SECONDS,
        ttl if (1..=MAX_TTL_SECONDS).contains(&ttl) => ttl as u32,
        ttl => return Err(SpecError::TtlOutOfRange(ttl)),
    };
    let strategy = if spec.type_ == "roundRobin" && !weights.is_empty() { "weighted".to_string() } else { spec.type_.clone() };
    Ok(StrategyPlan {
        strategy,
        label: spec.type_.clone(),
        ttl_seconds,
        primary_geo_tag: spec.primary_geo_tag.clone().filter(|p| !p.is_empty()),
        weights,
        settings: spec.settings.clone().unwrap_or_default(),
    })
}

/// The strategy that decides a Gslb: registered by name, or a policy compiled from a ConfigMap.
#[derive(Debug, Clone)]
pub enum StrategyRef {
    Named(String),
    Compiled { origin: String, strategy: Arc<CompiledStrategy> },
}

/// Something that decides. The engine's registry in production; deterministic for given inputs.
pub trait Decider {
    fn decide(&self, strategy: &StrategyRef, request: &StrategyRequest) -> Result<Decision, CallError>;
}

impl Decider for StrategyRegistry {
    fn decide(&self, strategy: &StrategyRef, request: &StrategyRequest) -> Result<Decision, CallError> {
        match strategy {
            StrategyRef::Named(name) => StrategyRegistry::decide(self, name, request),
            StrategyRef::Compiled { strategy, .. } => self.engine().decide(strategy, request),
        }
    }
}

/// Everything one Gslb's reconcile knows.
#[derive(Debug, Clone, Copy)]
pub struct ReconcileInputs<'a> {
    /// `namespace/name`, for the seed and messages.
    pub gslb_key: &'a str,
    pub local_geo_tag: &'a str,
    /// This cluster's view of each of the Gslb's hosts.
    pub hosts: &'a BTreeMap<String, LocalHost>,
    pub peers: &'a PeerView,
    /// The endpoints currently published, kept for a host whose strategy fails.
    pub previous: &'a [Endpoint],
}

/// How one host was decided.
#[derive(Debug, Clone, PartialEq)]
pub struct HostOutcome {
    pub host: String,
    pub result: Result<Decision, CallError>,
    /// When the strategy failed: how many previously published records were kept.
    pub kept_records: usize,
}

/// The outcome of a reconcile: sorted endpoints, per-host outcomes, and the status maps.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub endpoints: Vec<Endpoint>,
    pub outcomes: Vec<HostOutcome>,
    pub service_health: BTreeMap<String, HealthStatus>,
    pub healthy_records: BTreeMap<String, Vec<String>>,
}

/// Decides every host of a Gslb. A host whose strategy fails keeps its previously published records;
/// its local-targets record (plain facts) is always current.
pub fn render(plan: &StrategyPlan, strategy: &StrategyRef, inputs: ReconcileInputs<'_>, decider: &dyn Decider) -> Rendered {
    let mut endpoints = Vec::new();
    let mut outcomes = Vec::new();
    let mut service_health = BTreeMap::new();
    for (host, local) in inputs.hosts {
        service_health.insert(host.clone(), local.health);
        if local.health == HealthStatus::Healthy {
            endpoints.extend(records::local_targets(host, &local.addresses, plan.ttl_seconds));
        }
        let request = strategy_request(plan, &inputs, host, local);
        match decider.decide(strategy, &request) {
            Ok(decision) => {
                endpoints.extend(records::host_records(host, &plan.label, &decision));
                outcomes.push(HostOutcome { host: host.clone(), result: Ok(decision), kept_records: 0 });
            }
            Err(error) => {
                let kept: Vec<Endpoint> = inputs.previous.iter().filter(|e| e.dns_name == *host).cloned().collect();
                outcomes.push(HostOutcome { host: host.clone(), result: Err(error), kept_records: kept.len() });
                endpoints.extend(kept);
            }
        }
    }
    endpoints.sort_by(|a, b| (&a.dns_name, &a.record_type).cmp(&(&b.dns_name, &b.record_type)));
    let healthy_records = healthy_records(&endpoints);
    Rendered { endpoints, outcomes, service_health, healthy_records }
}

/// The strategy request for `host`: this cluster plus every peer, with k8gb's meaning of health
/// (a peer is healthy when it published at least one address).
fn strategy_request(plan: &StrategyPlan, inputs: &ReconcileInputs<'_>, host: &str, local: &LocalHost) -> StrategyRequest {
    let mut clusters = vec![ClusterView {
        geo_tag: inputs.local_geo_tag.to_string(),
        health: match local.health {
            HealthStatus::Healthy => Health::Healthy,
            HealthStatus::Unhealthy => Health::Unhealthy,
            HealthStatus::NotFound => Health::NotFound,
        },
        addresses: local.addresses.clone(),
    }];
    for (geo_tag, addresses) in inputs.peers.for_host(host) {
        if geo_tag != inputs.local_geo_tag {
            let health = if addresses.is_empty() { Health::NotFound } else { Health::Healthy };
            clusters.push(ClusterView { geo_tag: geo_tag.clone(), health, addresses: addresses.clone() });
        }
    }
    StrategyRequest {
        host: host.to_string(),
        local_geo_tag: inputs.local_geo_tag.to_string(),
        primary_geo_tag: plan.primary_geo_tag.clone(),
        weights: plan.weights.clone(),
        settings: plan.settings.clone(),
        clusters,
        default_ttl_seconds: plan.ttl_seconds,
        seed: fnv1a(&format!("{}/{host}", inputs.gslb_key)),
    }
}

/// `status.healthyRecords`: every host record with targets (local-targets records excluded).
fn healthy_records(endpoints: &[Endpoint]) -> BTreeMap<String, Vec<String>> {
    let mut records: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in endpoints {
        if !e.targets.is_empty() && !e.dns_name.starts_with("localtargets-") && matches!(e.record_type.as_str(), "A" | "AAAA") {
            records.entry(e.dns_name.clone()).or_default().extend(e.targets.iter().cloned());
        }
    }
    records
}

/// The application DNSEndpoint for `gslb`: named like it, labelled for the local DNS server, owned
/// by it. `owner` is the Gslb's (apiVersion, kind); the legacy group owns its own.
pub fn desired_dns_endpoint(gslb: &Gslb, endpoints: Vec<Endpoint>) -> DNSEndpoint {
    let local = || DNSTYPE_LABELS.iter().map(|k| (k.to_string(), "local".to_string())).collect::<BTreeMap<_, _>>();
    DNSEndpoint {
        metadata: ObjectMeta {
            name: gslb.metadata.name.clone(),
            namespace: gslb.metadata.namespace.clone(),
            labels: Some(local()),
            annotations: Some(local()),
            owner_references: gslb.controller_owner_ref(&()).map(|o| vec![OwnerReference { block_owner_deletion: Some(true), ..o }]),
            ..ObjectMeta::default()
        },
        spec: DNSEndpointSpec { endpoints },
        status: None,
    }
}

/// A stable 64-bit hash (FNV-1a): the strategy seed must not change between runs or releases.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3))
}
