//! Checks a strategy's decision against its request: a strategy may reorder and drop targets, never
//! invent them. Pure code, no wasm.

use std::collections::HashSet;
use std::net::IpAddr;

use super::types::{Decision, StrategyRequest, Target};

/// A decision as the strategy returned it, before the host checked it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDecision {
    pub targets: Vec<Target>,
    pub ttl_seconds: Option<u32>,
    pub reason: String,
}

/// Bounds the host puts on every decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecisionLimits {
    pub min_ttl_seconds: u32,
    pub max_ttl_seconds: u32,
    pub max_reason_bytes: usize,
}

impl Default for DecisionLimits {
    fn default() -> Self {
        DecisionLimits { min_ttl_seconds: 1, max_ttl_seconds: 3600, max_reason_bytes: 256 }
    }
}

/// A decision that breaks the contract; the strategy is at fault, never the request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContractViolation {
    #[error("target {address} is not an address of cluster '{geo_tag}' in the request")]
    ForeignAddress { geo_tag: String, address: IpAddr },
    #[error("target {address} of cluster '{geo_tag}' appears more than once")]
    DuplicateTarget { geo_tag: String, address: IpAddr },
}

/// Validates `raw` against `request`: targets must be request addresses of the named cluster and
/// unique; the TTL defaults to the request's and is clamped; the reason becomes one line of at most
/// `max_reason_bytes`.
pub fn validate_decision(
    request: &StrategyRequest,
    raw: RawDecision,
    limits: &DecisionLimits,
) -> Result<Decision, ContractViolation> {
    let mut seen = HashSet::with_capacity(raw.targets.len());
    for target in &raw.targets {
        let known = request
            .cluster(&target.geo_tag)
            .is_some_and(|cluster| cluster.addresses.binary_search(&target.address).is_ok());
        if !known {
            return Err(ContractViolation::ForeignAddress {
                geo_tag: target.geo_tag.clone(),
                address: target.address,
            });
        }
        if !seen.insert((target.geo_tag.as_str(), target.address)) {
            return Err(ContractViolation::DuplicateTarget {
                geo_tag: target.geo_tag.clone(),
                address: target.address,
            });
        }
    }
    let ttl = raw
        .ttl_seconds
        .unwrap_or(request.default_ttl_seconds)
        .clamp(limits.min_ttl_seconds, limits.max_ttl_seconds);
    Ok(Decision { targets: raw.targets, ttl_seconds: ttl, reason: one_line(&raw.reason, limits.max_reason_bytes) })
}

/// `text` with control characters turned into spaces, cut at a char boundary to at most `max` bytes.
fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for ch in text.chars() {
        let ch = if ch.is_control() { ' ' } else { ch };
        if out.len() + ch.len_utf8() > max {
            break;
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::types::{ClusterView, Health};

    fn request() -> StrategyRequest {
        StrategyRequest {
            host: "app.cloud.example.com".into(),
            local_geo_tag: "eu".into(),
            primary_geo_tag: None,
            weights: Default::default(),
            settings: Default::default(),
            clusters: vec![
                ClusterView { geo_tag: "eu".into(), health: Health::Healthy, addresses: vec!["10.0.0.1".parse().unwrap()] },
                ClusterView { geo_tag: "us".into(), health: Health::Healthy, addresses: vec!["2001:db8::1".parse().unwrap()] },
            ],
            default_ttl_seconds: 30,
            seed: 0,
        }
        .normalized()
        .unwrap()
    }

    fn target(tag: &str, ip: &str) -> Target {
        Target { geo_tag: tag.into(), address: ip.parse().unwrap(), weight: None }
    }

    #[test]
    fn accepts_request_addresses_and_defaults_ttl() {
        let raw = RawDecision { targets: vec![target("us", "2001:db8::1"), target("eu", "10.0.0.1")], ttl_seconds: None, reason: "ok".into() };
        let d = validate_decision(&request(), raw, &DecisionLimits::default()).unwrap();
        assert_eq!(d.ttl_seconds, 30);
        assert_eq!(d.targets.len(), 2);
    }

    #[test]
    fn rejects_invented_and_misattributed_addresses() {
        let limits = DecisionLimits::default();
        let invented = RawDecision { targets: vec![target("eu", "10.0.0.9")], ttl_seconds: None, reason: String::new() };
        assert!(matches!(validate_decision(&request(), invented, &limits), Err(ContractViolation::ForeignAddress { .. })));
        let wrong_cluster = RawDecision { targets: vec![target("us", "10.0.0.1")], ttl_seconds: None, reason: String::new() };
        assert!(matches!(validate_decision(&request(), wrong_cluster, &limits), Err(ContractViolation::ForeignAddress { .. })));
        let unknown_cluster = RawDecision { targets: vec![target("ap", "10.0.0.1")], ttl_seconds: None, reason: String::new() };
        assert!(matches!(validate_decision(&request(), unknown_cluster, &limits), Err(ContractViolation::ForeignAddress { .. })));
    }

    #[test]
    fn rejects_duplicates() {
        let raw = RawDecision { targets: vec![target("eu", "10.0.0.1"), target("eu", "10.0.0.1")], ttl_seconds: None, reason: String::new() };
        assert!(matches!(validate_decision(&request(), raw, &DecisionLimits::default()), Err(ContractViolation::DuplicateTarget { .. })));
    }

    #[test]
    fn clamps_ttl_and_bounds_reason() {
        let limits = DecisionLimits::default();
        let high = RawDecision { targets: vec![], ttl_seconds: Some(1_000_000), reason: "é".repeat(400) };
        let d = validate_decision(&request(), high, &limits).unwrap();
        assert_eq!(d.ttl_seconds, 3600);
        assert!(d.reason.len() <= 256 && d.reason.len() >= 255, "cut at a char boundary: {}", d.reason.len());
        let zero = RawDecision { targets: vec![], ttl_seconds: Some(0), reason: "two\nlines\u{7}".into() };
        let d = validate_decision(&request(), zero, &limits).unwrap();
        assert_eq!(d.ttl_seconds, 1);
        assert_eq!(d.reason, "two lines ");
    }
}
