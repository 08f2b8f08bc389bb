//! The operator's configuration: k8gb's environment variables (reference §6.1), parsed and checked
//! up front so a bad value stops start-up with a message naming the variable.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::reconcile::names::ns_name;

/// A zone this cluster serves, delegated from a parent zone (`DNS_ZONES` entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsZone {
    pub parent_zone: String,
    pub load_balanced_zone: String,
    pub neg_ttl_seconds: u32,
}

/// An edge DNS server: a name or address, and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeDnsServer {
    pub host: String,
    pub port: u16,
}

/// Everything the operator reads from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorConfig {
    /// `CLUSTER_GEO_TAG`: this cluster's geo tag.
    pub geo_tag: String,
    /// `EXT_GSLB_CLUSTERS_GEO_TAGS`: the peers' geo tags (this cluster's own removed).
    pub peer_geo_tags: Vec<String>,
    /// `DNS_ZONES`: `parent:zone:negTTL;…`.
    pub dns_zones: Vec<DnsZone>,
    /// `EDGE_DNS_SERVERS` (or the deprecated `EDGE_DNS_SERVER` + `EDGE_DNS_SERVER_PORT`).
    pub edge_dns_servers: Vec<EdgeDnsServer>,
    /// `RECONCILE_REQUEUE_SECONDS`: the periodic resync (events reconcile at once regardless).
    pub reconcile_requeue: Duration,
    /// `NS_RECORD_TTL`: TTL of the delegation's NS and glue records.
    pub ns_record_ttl: u32,
    /// `CLUSTER_EXPOSED_IPS`: addresses published for every Gslb without an annotation (IPv4 and IPv6).
    pub cluster_exposed_ips: Vec<IpAddr>,
    /// `GLUEA_PREFIX`: the NS-name prefix.
    pub glue_a_prefix: String,
    /// `POD_NAMESPACE`: where the delegation DNSEndpoint lives.
    pub pod_namespace: String,
    /// `METRICS_ADDRESS`: where `/metrics`, `/healthz` and `/readyz` are served.
    pub metrics_address: SocketAddr,
    /// `EXTDNS_ENABLED`: publish the zone delegation for external-dns.
    pub extdns_enabled: bool,
}

/// A configuration value that cannot be used; names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {message}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub message: String,
}

fn error(variable: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError { variable, message: message.into() }
}

impl OperatorConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(&std::env::vars().collect())
    }

    /// Reads the configuration from `vars` (the environment, or a test's map).
    pub fn from_vars(vars: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let geo_tag = get("CLUSTER_GEO_TAG").ok_or_else(|| error("CLUSTER_GEO_TAG", "is required (this cluster's geo tag, e.g. eu)"))?;
        check_geo_tag("CLUSTER_GEO_TAG", geo_tag)?;

        let mut seen = BTreeSet::new();
        let mut peer_geo_tags = Vec::new();
        for tag in list(get("EXT_GSLB_CLUSTERS_GEO_TAGS")) {
            check_geo_tag("EXT_GSLB_CLUSTERS_GEO_TAGS", tag)?;
            if !seen.insert(tag) {
                return Err(error("EXT_GSLB_CLUSTERS_GEO_TAGS", format!("'{tag}' is listed twice")));
            }
            if tag != geo_tag {
                peer_geo_tags.push(tag.to_string());
            }
        }

        let glue_a_prefix = vars.get("GLUEA_PREFIX").cloned().unwrap_or_else(|| "gslb-ns-".to_string());
        let dns_zones = parse_dns_zones(get("DNS_ZONES").unwrap_or_default())?;
        for zone in &dns_zones {
            for tag in std::iter::once(geo_tag).chain(peer_geo_tags.iter().map(String::as_str)) {
                let ns = ns_name(&glue_a_prefix, tag, &zone.load_balanced_zone, &zone.parent_zone);
                if ns.len() > 253 || ns.split('.').any(|label| label.len() > 63) {
                    return Err(error("DNS_ZONES", format!("the NS name '{ns}' is longer than DNS allows")));
                }
            }
        }

        let edge_dns_servers = match get("EDGE_DNS_SERVERS") {
            Some(raw) => list(Some(raw)).into_iter().map(|s| parse_server("EDGE_DNS_SERVERS", s)).collect::<Result<Vec<_>, _>>()?,
            None => match get("EDGE_DNS_SERVER") {
                Some(host) => {
                    let port = parse_number("EDGE_DNS_SERVER_PORT", get("EDGE_DNS_SERVER_PORT"), 53u16)?;
                    vec![EdgeDnsServer { host: host.to_string(), port }]
                }
                None => Vec::new(),
            },
        };
        let cluster_exposed_ips = list(get("CLUSTER_EXPOSED_IPS"))
            .into_iter()
            .map(|s| s.parse().map_err(|_| error("CLUSTER_EXPOSED_IPS", format!("'{s}' is not an IP address"))))
            .collect::<Result<Vec<IpAddr>, _>>()?;
        let metrics_address = get("METRICS_ADDRESS")
            .unwrap_or("0.0.0.0:8080")
            .parse()
            .map_err(|_| error("METRICS_ADDRESS", "must be ADDRESS:PORT, e.g. 0.0.0.0:8080"))?;
        let extdns_enabled = match get("EXTDNS_ENABLED") {
            None => false,
            Some(v) => v.parse().map_err(|_| error("EXTDNS_ENABLED", format!("'{v}' is not true or false")))?,
        };
        let ns_record_ttl = parse_number("NS_RECORD_TTL", get("NS_RECORD_TTL"), 30u32)?;
        if ns_record_ttl == 0 {
            return Err(error("NS_RECORD_TTL", "must be at least 1"));
        }
        Ok(OperatorConfig {
            geo_tag: geo_tag.to_string(),
            peer_geo_tags,
            dns_zones,
            edge_dns_servers,
            reconcile_requeue: Duration::from_secs(parse_number("RECONCILE_REQUEUE_SECONDS", get("RECONCILE_REQUEUE_SECONDS"), 30u64)?),
            ns_record_ttl,
            cluster_exposed_ips,
            glue_a_prefix,
            pod_namespace: get("POD_NAMESPACE").unwrap_or("k8gb").to_string(),
            metrics_address,
            extdns_enabled,
        })
    }
}

/// Comma-separated items, trimmed, empty ones dropped.
fn list(raw: Option<&str>) -> Vec<&str> {
    raw.unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).collect()
}

fn parse_number<T: std::str::FromStr>(variable: &'static str, raw: Option<&str>, default: T) -> Result<T, ConfigError> {
    match raw {
        None => Ok(default),
        Some(raw) => raw.parse().map_err(|_| error(variable, format!("'{raw}' is not a valid non-negative number"))),
    }
}

/// Geo tags: letters, digits and '-' (k8gb's rule), 1 to 63 bytes.
fn check_geo_tag(variable: &'static str, tag: &str) -> Result<(), ConfigError> {
    if tag.is_empty() || tag.len() > 63 || !tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(error(variable, format!("'{tag}' is not a geo tag (letters, digits and '-')")));
    }
    Ok(())
}

/// `parent:zone:negTTL;…`, as k8gb's chart writes it.
fn parse_dns_zones(raw: &str) -> Result<Vec<DnsZone>, ConfigError> {
    let mut zones = Vec::new();
    for entry in raw.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let parts: Vec<&str> = entry.split(':').map(str::trim).collect();
        let [parent, zone, neg_ttl] = parts[..] else {
            return Err(error("DNS_ZONES", format!("'{entry}' must be parentZone:loadBalancedZone:negTTL")));
        };
        let neg_ttl_seconds = neg_ttl.parse().map_err(|_| error("DNS_ZONES", format!("'{entry}': negTTL '{neg_ttl}' is not a number")))?;
        let (parent, zone) = (parent.trim_end_matches('.').to_ascii_lowercase(), zone.trim_end_matches('.').to_ascii_lowercase());
        if parent.is_empty() || zone == parent || !zone.ends_with(&format!(".{parent}")) {
            return Err(error("DNS_ZONES", format!("'{entry}': {zone} must be a subdomain of {parent}")));
        }
        zones.push(DnsZone { parent_zone: parent, load_balanced_zone: zone, neg_ttl_seconds });
    }
    Ok(zones)
}

/// `host`, `host:port`, `[v6]:port` or a bare IPv6 address (k8gb skips IPv6 servers; Tern uses them).
fn parse_server(variable: &'static str, raw: &str) -> Result<EdgeDnsServer, ConfigError> {
    if let Ok(ip) = raw.parse::<IpAddr>() {
        return Ok(EdgeDnsServer { host: ip.to_string(), port: 53 });
    }
    if let Ok(addr) = raw.parse::<SocketAddr>() {
        return Ok(EdgeDnsServer { host: addr.ip().to_string(), port: addr.port() });
    }
    let (host, port) = match raw.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().map_err(|_| error(variable, format!("'{raw}': '{port}' is not a port")))?),
        None => (raw, 53),
    };
    let valid = !host.is_empty() && host.split('.').all(|l| !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if !valid {
        return Err(error(variable, format!("'{raw}' is not host, host:port or an IP address")));
    }
    Ok(EdgeDnsServer { host: host.to_string(), port })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn reads_k8gbs_variables() {
        let config = OperatorConfig::from_vars(&vars(&[
            ("CLUSTER_GEO_TAG", "eu"),
            ("EXT_GSLB_CLUSTERS_GEO_TAGS", "eu, us,ap-south"),
            ("DNS_ZONES", "example.com:cloud.example.com:30;"),
            ("EDGE_DNS_SERVERS", "1.1.1.1,dns.example.net:5353,[2001:db8::53]:53,2001:db8::54"),
            ("RECONCILE_REQUEUE_SECONDS", "10"),
            ("CLUSTER_EXPOSED_IPS", "10.0.0.1, 2001:db8::1"),
        ]))
        .unwrap();
        assert_eq!(config.peer_geo_tags, ["us", "ap-south"]);
        assert_eq!(config.dns_zones, [DnsZone { parent_zone: "example.com".into(), load_balanced_zone: "cloud.example.com".into(), neg_ttl_seconds: 30 }]);
        let servers: Vec<(String, u16)> = config.edge_dns_servers.iter().map(|s| (s.host.clone(), s.port)).collect();
        assert_eq!(servers, [("1.1.1.1".into(), 53), ("dns.example.net".into(), 5353), ("2001:db8::53".into(), 53), ("2001:db8::54".into(), 53)]);
        assert_eq!(config.reconcile_requeue, Duration::from_secs(10));
        assert_eq!(config.cluster_exposed_ips.len(), 2);
        assert_eq!((config.ns_record_ttl, config.glue_a_prefix.as_str(), config.pod_namespace.as_str()), (30, "gslb-ns-", "k8gb"));
        assert_eq!(config.metrics_address, "0.0.0.0:8080".parse().unwrap());
    }

    #[test]
    fn the_deprecated_single_edge_server_still_works() {
        let config = OperatorConfig::from_vars(&vars(&[("CLUSTER_GEO_TAG", "eu"), ("EDGE_DNS_SERVER", "10.0.0.53"), ("EDGE_DNS_SERVER_PORT", "1053")])).unwrap();
        assert_eq!(config.edge_dns_servers, [EdgeDnsServer { host: "10.0.0.53".into(), port: 1053 }]);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let bad = |pairs: &[(&str, &str)]| OperatorConfig::from_vars(&vars(pairs)).unwrap_err().variable;
        assert_eq!(bad(&[]), "CLUSTER_GEO_TAG");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu west")]), "CLUSTER_GEO_TAG");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("EXT_GSLB_CLUSTERS_GEO_TAGS", "us,us")]), "EXT_GSLB_CLUSTERS_GEO_TAGS");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("DNS_ZONES", "example.com:cloud.example.com")]), "DNS_ZONES");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("DNS_ZONES", "example.com:cloud.other.com:30")]), "DNS_ZONES");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("EDGE_DNS_SERVERS", "dns.example.net:http")]), "EDGE_DNS_SERVERS");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("CLUSTER_EXPOSED_IPS", "10.0.0.300")]), "CLUSTER_EXPOSED_IPS");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("RECONCILE_REQUEUE_SECONDS", "-1")]), "RECONCILE_REQUEUE_SECONDS");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("NS_RECORD_TTL", "0")]), "NS_RECORD_TTL");
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("METRICS_ADDRESS", "8080")]), "METRICS_ADDRESS");
        let long = format!("example.com:{}.example.com:30", "a".repeat(60));
        assert_eq!(bad(&[("CLUSTER_GEO_TAG", "eu"), ("DNS_ZONES", &long)]), "DNS_ZONES");
    }
}
