//! failover: the primary cluster while it can serve, every other healthy cluster when it cannot
//! (k8gb's `failover` with `primaryGeoTag`).
//!
//! Every cluster decides alike, so the fleet agrees: a healthy primary answers with itself, a secondary
//! answers with the primary, and when the primary is down all of them answer with every healthy
//! cluster. Without a usable primary it answers like roundRobin and says so.

use tern_strategy_sdk::{ClusterExt, Decision, Request, RequestExt, Strategy, StrategyError, decision, export_strategy, geo_tags, targets_of};

struct Failover;

impl Strategy for Failover {
    fn decide(req: &Request) -> Result<Decision, StrategyError> {
        let available = req.available();
        let Some(primary) = req.primary_geo_tag.as_deref() else {
            let reason = format!(
                "failover: no primaryGeoTag, answering like roundRobin: healthy clusters: {}",
                geo_tags(&available)
            );
            return Ok(decision(targets_of(&available), reason));
        };
        let Some(primary_cluster) = req.cluster(primary) else {
            let reason = format!(
                "failover: primary {primary} is not a known cluster, answering like roundRobin: healthy clusters: {}",
                geo_tags(&available)
            );
            return Ok(decision(targets_of(&available), reason));
        };
        if primary_cluster.is_available() {
            let reason = format!("failover: primary {primary} is healthy");
            return Ok(decision(primary_cluster.targets(None), reason));
        }
        let reason = format!(
            "failover: primary {primary} is down, serving healthy clusters: {}",
            geo_tags(&available)
        );
        Ok(decision(targets_of(&available), reason))
    }
}

export_strategy!(Failover);
