//! weighted: every healthy cluster's addresses, each carrying its cluster's weight (k8gb's
//! `roundRobin` with a `weight` map).
//!
//! * A cluster missing from a non-empty weight map gets weight 0.
//! * Weight 0 drains a cluster: its addresses stay in the record, but the DNS server answers with them
//!   only when no cluster with a positive weight is left.
//! * An empty weight map weighs every cluster 1 (plain round robin).

use tern_strategy_sdk::{ClusterExt, Decision, Request, RequestExt, Strategy, StrategyError, decision, export_strategy};

struct Weighted;

impl Strategy for Weighted {
    fn decide(req: &Request) -> Result<Decision, StrategyError> {
        let mut targets = Vec::new();
        let mut shares: Vec<String> = Vec::new();
        for cluster in req.available() {
            let weight = if req.weights.is_empty() { 1 } else { req.weight(&cluster.geo_tag).unwrap_or(0) };
            targets.extend(cluster.targets(Some(weight)));
            shares.push(format!("{}={}", cluster.geo_tag, weight));
        }
        let reason = if shares.is_empty() {
            String::from("weighted: no healthy cluster")
        } else {
            format!("weighted: {}", shares.join(" "))
        };
        Ok(decision(targets, reason))
    }
}

export_strategy!(Weighted);
