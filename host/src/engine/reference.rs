//! Plain Rust reference implementations of the built-in strategies: the oracle the WebAssembly builds
//! are tested against, and the baseline the benchmark measures them by.
//!
//! Written independently of the guests in `strategies/`, on the host's own types; the property tests
//! require both to return identical decisions (targets, weights, TTL and reason) for every request.

use super::types::{ClusterView, StrategyRequest, Target};
use super::validate::RawDecision;

/// The built-in strategies, by their k8gb names.
pub const BUILTIN_NAMES: [&str; 4] = ["roundRobin", "weighted", "failover", "geoip"];

/// Decides `request` with the reference implementation of built-in `name`; `None` for other names.
pub fn decide(name: &str, request: &StrategyRequest) -> Option<Result<RawDecision, String>> {
    if !request.settings.is_empty() {
        let key = request.settings.keys().next().map(String::as_str).unwrap_or_default();
        return Some(Err(format!("unknown setting '{key}': this strategy takes no settings")));
    }
    let decision = match name {
        "roundRobin" => round_robin(request),
        "weighted" => weighted(request),
        "failover" => failover(request),
        "geoip" => geoip(request),
        _ => return None,
    };
    Some(Ok(decision))
}

fn available(request: &StrategyRequest) -> Vec<&ClusterView> {
    request.clusters.iter().filter(|c| c.is_available()).collect()
}

fn targets(clusters: &[&ClusterView], weight: impl Fn(&ClusterView) -> Option<u32>) -> Vec<Target> {
    let mut out = Vec::new();
    for cluster in clusters {
        let w = weight(cluster);
        out.extend(cluster.addresses.iter().map(|a| Target { geo_tag: cluster.geo_tag.clone(), address: *a, weight: w }));
    }
    out
}

fn tags(clusters: &[&ClusterView]) -> String {
    if clusters.is_empty() {
        "none".to_string()
    } else {
        clusters.iter().map(|c| c.geo_tag.as_str()).collect::<Vec<_>>().join(", ")
    }
}

fn raw(targets: Vec<Target>, reason: String) -> RawDecision {
    RawDecision { targets, ttl_seconds: None, reason }
}

/// Every available cluster's addresses, in cluster order.
pub fn round_robin(request: &StrategyRequest) -> RawDecision {
    let up = available(request);
    raw(targets(&up, |_| None), format!("roundRobin: healthy clusters: {}", tags(&up)))
}

/// Like roundRobin; geoip narrowing happens per query in the DNS server.
pub fn geoip(request: &StrategyRequest) -> RawDecision {
    let up = available(request);
    raw(
        targets(&up, |_| None),
        format!("geoip: healthy clusters: {}; narrowed per client at query time", tags(&up)),
    )
}

/// Available clusters with their weights: missing from a non-empty map means 0, an empty map means 1.
pub fn weighted(request: &StrategyRequest) -> RawDecision {
    let up = available(request);
    let weight_of = |c: &ClusterView| {
        if request.weights.is_empty() { 1 } else { request.weights.get(&c.geo_tag).copied().unwrap_or(0) }
    };
    let reason = if up.is_empty() {
        "weighted: no healthy cluster".to_string()
    } else {
        let shares: Vec<String> = up.iter().map(|c| format!("{}={}", c.geo_tag, weight_of(c))).collect();
        format!("weighted: {}", shares.join(" "))
    };
    raw(targets(&up, |c| Some(weight_of(c))), reason)
}

/// The primary while it is available, else every available cluster; roundRobin without a known primary.
pub fn failover(request: &StrategyRequest) -> RawDecision {
    let up = available(request);
    let Some(primary) = request.primary_geo_tag.as_deref() else {
        return raw(
            targets(&up, |_| None),
            format!("failover: no primaryGeoTag, answering like roundRobin: healthy clusters: {}", tags(&up)),
        );
    };
    match request.cluster(primary) {
        None => raw(
            targets(&up, |_| None),
            format!(
                "failover: primary {primary} is not a known cluster, answering like roundRobin: healthy clusters: {}",
                tags(&up)
            ),
        ),
        Some(cluster) if cluster.is_available() => {
            raw(targets(&[cluster], |_| None), format!("failover: primary {primary} is healthy"))
        }
        Some(_) => raw(
            targets(&up, |_| None),
            format!("failover: primary {primary} is down, serving healthy clusters: {}", tags(&up)),
        ),
    }
}
