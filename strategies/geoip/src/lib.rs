//! geoip: every healthy cluster's addresses with their geo tags (k8gb's `geoip`).
//!
//! The DNS server narrows the answer per query to the targets nearest the client; this decision is the
//! set it narrows from, and its fallback when the client's location is unknown.

use tern_strategy_sdk::{Decision, Request, RequestExt, Strategy, StrategyError, decision, export_strategy, geo_tags, targets_of};

struct GeoIp;

impl Strategy for GeoIp {
    fn decide(req: &Request) -> Result<Decision, StrategyError> {
        let available = req.available();
        let reason = format!("geoip: healthy clusters: {}; narrowed per client at query time", geo_tags(&available));
        Ok(decision(targets_of(&available), reason))
    }
}

export_strategy!(GeoIp);
