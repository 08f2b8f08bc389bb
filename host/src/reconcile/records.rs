//! The records of an application DNSEndpoint: local targets, the decided host record, k8gb's labels.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::api::Endpoint;
use crate::engine::Decision;

use super::names::local_targets_name;

/// `localtargets-<host>` A and AAAA records for this cluster's addresses (none when it has none).
pub fn local_targets(host: &str, addresses: &[IpAddr], ttl: u32) -> Vec<Endpoint> {
    let name = local_targets_name(host);
    split_by_family(addresses.iter().copied())
        .into_iter()
        .map(|(record_type, targets)| endpoint(&name, record_type, targets.iter().map(|ip| ip.to_string()).collect(), ttl, BTreeMap::new()))
        .collect()
}

/// The host's A and AAAA records from a decision, labelled as k8gb's CoreDNS plugin expects:
/// `strategy: <type>` and, for weighted targets, `weight-<geoTag>-<index>-<weight>: <address>`.
pub fn host_records(host: &str, strategy_label: &str, decision: &Decision) -> Vec<Endpoint> {
    let mut records = Vec::new();
    for (record_type, is_v4) in [("A", true), ("AAAA", false)] {
        let targets: Vec<_> = decision.targets.iter().filter(|t| t.address.is_ipv4() == is_v4).collect();
        if targets.is_empty() {
            continue;
        }
        let mut labels = BTreeMap::from([("strategy".to_string(), strategy_label.to_string())]);
        let mut index_in_geo: BTreeMap<&str, usize> = BTreeMap::new();
        for target in &targets {
            if let Some(weight) = target.weight {
                let index = index_in_geo.entry(target.geo_tag.as_str()).or_default();
                labels.insert(format!("weight-{}-{}-{}", target.geo_tag, index, weight), target.address.to_string());
                *index += 1;
            }
        }
        let values = targets.iter().map(|t| t.address.to_string()).collect();
        records.push(endpoint(host, record_type, values, decision.ttl_seconds, labels));
    }
    records
}

fn split_by_family(addresses: impl Iterator<Item = IpAddr>) -> Vec<(&'static str, Vec<IpAddr>)> {
    let (mut v4, mut v6): (Vec<IpAddr>, Vec<IpAddr>) = addresses.partition(IpAddr::is_ipv4);
    v4.sort();
    v4.dedup();
    v6.sort();
    v6.dedup();
    [("A", v4), ("AAAA", v6)].into_iter().filter(|(_, ips)| !ips.is_empty()).collect()
}

fn endpoint(name: &str, record_type: &str, targets: Vec<String>, ttl: u32, labels: BTreeMap<String, String>) -> Endpoint {
    Endpoint {
        dns_name: name.to_string(),
        targets,
        record_type: record_type.to_string(),
        set_identifier: None,
        record_ttl: Some(i64::from(ttl)),
        labels,
        provider_specific: Vec::new(),
    }
}
