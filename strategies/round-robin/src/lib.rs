//! roundRobin: every healthy cluster's addresses, in cluster order (k8gb's `roundRobin`).
//!
//! The DNS server shuffles the answer per query; the published record order is deterministic.

use tern_strategy_sdk::{Decision, Request, RequestExt, Strategy, StrategyError, decision, export_strategy, geo_tags, targets_of};

struct RoundRobin;

impl Strategy for RoundRobin {
    fn decide(req: &Request) -> Result<Decision, StrategyError> {
        let available = req.available();
        let reason = format!("roundRobin: healthy clusters: {}", geo_tags(&available));
        Ok(decision(targets_of(&available), reason))
    }
}

export_strategy!(RoundRobin);
