//! What one reconcile knows: this cluster's view of each host, and what the peers published.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::api::HealthStatus;

/// This cluster's view of one host: its health and the addresses it exposes (IPv4 and IPv6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalHost {
    pub health: HealthStatus,
    #[serde(default)]
    pub addresses: Vec<IpAddr>,
}

/// What each peer publishes as `localtargets-<host>`: host -> geo tag -> addresses. A peer absent for
/// a host did not answer (unreachable, or the host is not healthy there).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PeerView {
    pub hosts: BTreeMap<String, BTreeMap<String, Vec<IpAddr>>>,
}

impl PeerView {
    /// The peers' answers for `host`, by geo tag.
    pub fn for_host(&self, host: &str) -> impl Iterator<Item = (&String, &Vec<IpAddr>)> {
        self.hosts.get(host).into_iter().flatten()
    }

    /// Records that peer `geo_tag` publishes `addresses` for `host`.
    pub fn insert(&mut self, host: &str, geo_tag: &str, addresses: Vec<IpAddr>) {
        self.hosts.entry(host.to_string()).or_default().insert(geo_tag.to_string(), addresses);
    }
}
