//! Conversions between the host's types and the generated WIT bindings.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::sandbox::wit;
use super::types::{ClusterView, Health, StrategyRequest, Target};
use super::validate::RawDecision;

pub(crate) fn request_to_wit(request: &StrategyRequest) -> wit::Request {
    wit::Request {
        host: request.host.clone(),
        local_geo_tag: request.local_geo_tag.clone(),
        primary_geo_tag: request.primary_geo_tag.clone(),
        weights: request.weights.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        settings: request.settings.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        clusters: request.clusters.iter().map(cluster_to_wit).collect(),
        default_ttl_seconds: request.default_ttl_seconds,
        seed: request.seed,
    }
}

fn cluster_to_wit(cluster: &ClusterView) -> wit::Cluster {
    wit::Cluster {
        geo_tag: cluster.geo_tag.clone(),
        health: match cluster.health {
            Health::Healthy => wit::Health::Healthy,
            Health::Unhealthy => wit::Health::Unhealthy,
            Health::NotFound => wit::Health::NotFound,
        },
        addresses: cluster.addresses.iter().map(|a| address_to_wit(*a)).collect(),
    }
}

fn address_to_wit(address: IpAddr) -> wit::IpAddress {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            wit::IpAddress::Ipv4((a, b, c, d))
        }
        IpAddr::V6(v6) => {
            let [a, b, c, d, e, f, g, h] = v6.segments();
            wit::IpAddress::Ipv6((a, b, c, d, e, f, g, h))
        }
    }
}

fn address_from_wit(address: wit::IpAddress) -> IpAddr {
    match address {
        wit::IpAddress::Ipv4((a, b, c, d)) => IpAddr::V4(Ipv4Addr::new(a, b, c, d)),
        wit::IpAddress::Ipv6((a, b, c, d, e, f, g, h)) => IpAddr::V6(Ipv6Addr::new(a, b, c, d, e, f, g, h)),
    }
}

pub(crate) fn decision_from_wit(decision: wit::Decision) -> RawDecision {
    RawDecision {
        targets: decision
            .targets
            .into_iter()
            .map(|t| Target { geo_tag: t.geo_tag, address: address_from_wit(t.address), weight: t.weight })
            .collect(),
        ttl_seconds: decision.ttl_seconds,
        reason: decision.reason,
    }
}
