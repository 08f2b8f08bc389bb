//! The host's side of the strategy contract: requests and decisions as plain Rust values.
//!
//! These mirror `wit/strategy.wit` with Rust types (`IpAddr`, maps) and serde, so the CLI, the operator
//! and the reference implementations never touch generated bindings. The YAML/JSON form (camelCase) is
//! the one `tern strategy eval --request` reads.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Most clusters a request may carry.
pub const MAX_CLUSTERS: usize = 64;
/// Most addresses one cluster may carry.
pub const MAX_ADDRESSES_PER_CLUSTER: usize = 256;
/// Longest geo tag, in bytes (a DNS label).
pub const MAX_GEO_TAG_LEN: usize = 63;
/// Longest host name, in bytes.
pub const MAX_HOST_LEN: usize = 253;
/// Most settings, and the longest setting key and value.
pub const MAX_SETTINGS: usize = 64;
pub const MAX_SETTING_LEN: usize = 4096;

/// A cluster's health for one host, named as k8gb names it in `status.serviceHealth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Health {
    Healthy,
    Unhealthy,
    NotFound,
}

/// One cluster's view of a host: the local cluster's own, or what a peer publishes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterView {
    pub geo_tag: String,
    pub health: Health,
    #[serde(default)]
    pub addresses: Vec<IpAddr>,
}

impl ClusterView {
    /// Healthy and with at least one address: a cluster that can take traffic.
    pub fn is_available(&self) -> bool {
        self.health == Health::Healthy && !self.addresses.is_empty()
    }
}

/// Everything a strategy may base its decision on (the WIT `request`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StrategyRequest {
    pub host: String,
    pub local_geo_tag: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_geo_tag: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weights: BTreeMap<String, u32>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    pub clusters: Vec<ClusterView>,
    #[serde(default = "default_ttl")]
    pub default_ttl_seconds: u32,
    #[serde(default)]
    pub seed: u64,
}

fn default_ttl() -> u32 {
    30
}

/// A request that breaks the contract's limits, named by field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("host: {0}")]
    Host(String),
    #[error("clusters: {count} clusters, at most {MAX_CLUSTERS} are allowed")]
    TooManyClusters { count: usize },
    #[error("clusters[{geo_tag}]: {count} addresses, at most {MAX_ADDRESSES_PER_CLUSTER} are allowed")]
    TooManyAddresses { geo_tag: String, count: usize },
    #[error("clusters: geo tag '{0}' appears more than once")]
    DuplicateGeoTag(String),
    #[error("geo tag '{0}': must be 1 to {MAX_GEO_TAG_LEN} bytes")]
    BadGeoTag(String),
    #[error("settings: {0}")]
    Settings(String),
}

impl StrategyRequest {
    /// Checks the contract's limits and puts the request in its canonical form: clusters sorted by geo
    /// tag, addresses sorted and de-duplicated. Strategies may rely on both.
    pub fn normalized(mut self) -> Result<Self, RequestError> {
        if self.host.is_empty() || self.host.len() > MAX_HOST_LEN {
            return Err(RequestError::Host(format!("must be 1 to {MAX_HOST_LEN} bytes")));
        }
        check_geo_tag(&self.local_geo_tag)?;
        if let Some(primary) = &self.primary_geo_tag {
            check_geo_tag(primary)?;
        }
        for tag in self.weights.keys() {
            check_geo_tag(tag)?;
        }
        if self.settings.len() > MAX_SETTINGS {
            return Err(RequestError::Settings(format!("{} settings, at most {MAX_SETTINGS} are allowed", self.settings.len())));
        }
        if let Some((key, _)) = self.settings.iter().find(|(k, v)| k.len() > MAX_SETTING_LEN || v.len() > MAX_SETTING_LEN) {
            return Err(RequestError::Settings(format!("'{key}': keys and values are at most {MAX_SETTING_LEN} bytes")));
        }
        if self.clusters.len() > MAX_CLUSTERS {
            return Err(RequestError::TooManyClusters { count: self.clusters.len() });
        }
        for cluster in &mut self.clusters {
            check_geo_tag(&cluster.geo_tag)?;
            cluster.addresses.sort();
            cluster.addresses.dedup();
            if cluster.addresses.len() > MAX_ADDRESSES_PER_CLUSTER {
                return Err(RequestError::TooManyAddresses {
                    geo_tag: cluster.geo_tag.clone(),
                    count: cluster.addresses.len(),
                });
            }
        }
        self.clusters.sort_by(|a, b| a.geo_tag.cmp(&b.geo_tag));
        if let Some(pair) = self.clusters.windows(2).find(|w| w[0].geo_tag == w[1].geo_tag) {
            return Err(RequestError::DuplicateGeoTag(pair[0].geo_tag.clone()));
        }
        Ok(self)
    }

    /// The cluster with this geo tag.
    pub fn cluster(&self, geo_tag: &str) -> Option<&ClusterView> {
        self.clusters.iter().find(|c| c.geo_tag == geo_tag)
    }
}

fn check_geo_tag(tag: &str) -> Result<(), RequestError> {
    if tag.is_empty() || tag.len() > MAX_GEO_TAG_LEN {
        return Err(RequestError::BadGeoTag(tag.to_string()));
    }
    Ok(())
}

/// One address to answer with (the WIT `target`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub geo_tag: String,
    pub address: IpAddr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}

/// A validated decision: every target comes from the request, the TTL is resolved and clamped, and
/// the reason is one bounded line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub targets: Vec<Target>,
    pub ttl_seconds: u32,
    pub reason: String,
}
