//! k8gb's rules for hosts, health and exposed addresses, as pure functions over Kubernetes objects.

use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;

use crate::api::gslb::{NamespacedName, ResourceRef, Server};
use crate::api::{HealthStatus, ServiceHealthPolicy};

/// Gslb annotation: comma-separated hostnames resolved through the edge DNS (highest precedence).
pub const EXPOSED_HOSTNAMES: &str = "k8gb.io/exposed-hostnames";
/// Gslb annotation: comma-separated addresses (IPv4 or IPv6) to publish instead of the discovered ones.
pub const EXPOSED_IP_ADDRESSES: &str = "k8gb.io/exposed-ip-addresses";
/// Gslb annotation: the host of a Gslb that references a LoadBalancer Service.
pub const HOSTNAME: &str = "k8gb.io/hostname";

/// Why a Gslb's resources cannot be resolved; each names what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("annotation {EXPOSED_IP_ADDRESSES}: '{0}' is not an IP address")]
    BadExposedIp(String),
    #[error("annotation {EXPOSED_HOSTNAMES}: '{0}' is not a valid hostname")]
    BadExposedHostname(String),
    #[error("annotation {HOSTNAME} is required on a Gslb that references a Service")]
    MissingHostname,
    #[error("spec.resourceRef: Service {0} is not of type LoadBalancer")]
    NotLoadBalancer(String),
}

/// The hosts of an Ingress and the Services behind each (one server per rule with a host).
/// Rules without `http` have no Services (k8gb dereferences a nil pointer there).
pub fn servers_from_ingress(ingress: &Ingress) -> Vec<Server> {
    let namespace = ingress.metadata.namespace.clone().unwrap_or_default();
    let rules = ingress.spec.iter().flat_map(|s| s.rules.iter().flatten());
    let mut servers: Vec<Server> = Vec::new();
    for rule in rules {
        let Some(host) = rule.host.clone().filter(|h| !h.is_empty()) else { continue };
        let mut services: Vec<NamespacedName> = rule
            .http
            .iter()
            .flat_map(|http| http.paths.iter())
            .filter_map(|path| path.backend.service.as_ref())
            .map(|svc| NamespacedName { namespace: namespace.clone(), name: svc.name.clone() })
            .collect();
        match servers.iter_mut().find(|s| s.host == host) {
            Some(server) => server.services.append(&mut services),
            None => servers.push(Server { host, services }),
        }
    }
    for server in &mut servers {
        server.services.sort();
        server.services.dedup();
    }
    servers.sort_by(|a, b| a.host.cmp(&b.host));
    servers
}

/// The one server of a Gslb referencing a LoadBalancer Service: host from the Gslb's annotation.
pub fn server_from_service(service: &Service, gslb_hostname: Option<&str>) -> Result<Server, ResolveError> {
    let name = service.metadata.name.clone().unwrap_or_default();
    let namespace = service.metadata.namespace.clone().unwrap_or_default();
    if service.spec.as_ref().and_then(|s| s.type_.as_deref()) != Some("LoadBalancer") {
        return Err(ResolveError::NotLoadBalancer(format!("{namespace}/{name}")));
    }
    let host = gslb_hostname.map(str::trim).filter(|h| !h.is_empty()).ok_or(ResolveError::MissingHostname)?;
    Ok(Server { host: host.to_string(), services: vec![NamespacedName { namespace, name }] })
}

/// What is known of one backing Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceState {
    /// The Service does not exist.
    Missing,
    /// The Service exists; `ready` says whether any endpoint is ready.
    Present { ready: bool },
}

/// Whether any endpoint of the Service's slices has an address and is not marked unready.
pub fn service_ready(slices: &[EndpointSlice]) -> bool {
    slices.iter().flat_map(|s| s.endpoints.iter().flatten()).any(|endpoint| {
        !endpoint.addresses.is_empty() && endpoint.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true)
    })
}

/// A host's health from its Services' states, under the Gslb's policy (k8gb §2.6).
pub fn host_health(services: &[ServiceState], policy: ServiceHealthPolicy) -> HealthStatus {
    let missing = services.iter().filter(|s| **s == ServiceState::Missing).count();
    let ready = services.iter().filter(|s| **s == ServiceState::Present { ready: true }).count();
    let unready = services.len() - missing - ready;
    match policy {
        _ if services.is_empty() => HealthStatus::NotFound,
        ServiceHealthPolicy::All if missing > 0 => HealthStatus::NotFound,
        ServiceHealthPolicy::All if unready > 0 => HealthStatus::Unhealthy,
        ServiceHealthPolicy::All => HealthStatus::Healthy,
        ServiceHealthPolicy::Any if ready > 0 => HealthStatus::Healthy,
        ServiceHealthPolicy::Any if unready > 0 => HealthStatus::Unhealthy,
        ServiceHealthPolicy::Any => HealthStatus::NotFound,
    }
}

/// Where a Gslb's exposed addresses come from, in k8gb's precedence order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExposedSource {
    /// `k8gb.io/exposed-hostnames`: resolve these through the edge DNS.
    Hostnames(Vec<String>),
    /// `k8gb.io/exposed-ip-addresses`, `CLUSTER_EXPOSED_IPS`, or the resource's status addresses.
    Addresses(Vec<IpAddr>),
}

/// Picks the exposed-address source: annotation hostnames, annotation addresses, the cluster-wide
/// `CLUSTER_EXPOSED_IPS`, then what the resource's status reports. IPv6 is kept (k8gb drops it), and
/// list items are trimmed (k8gb does not trim addresses).
pub fn exposed_source(
    exposed_hostnames: Option<&str>,
    exposed_ip_addresses: Option<&str>,
    cluster_exposed_ips: &[IpAddr],
    status_addresses: &[IpAddr],
) -> Result<ExposedSource, ResolveError> {
    if let Some(raw) = exposed_hostnames {
        let names = split_list(raw);
        if let Some(bad) = names.iter().find(|n| !is_hostname(n)) {
            return Err(ResolveError::BadExposedHostname(bad.to_string()));
        }
        return Ok(ExposedSource::Hostnames(names.into_iter().map(str::to_string).collect()));
    }
    if let Some(raw) = exposed_ip_addresses {
        let parsed: Result<Vec<IpAddr>, _> =
            split_list(raw).into_iter().map(|s| s.parse().map_err(|_| ResolveError::BadExposedIp(s.to_string()))).collect();
        return Ok(ExposedSource::Addresses(sorted(parsed?)));
    }
    if !cluster_exposed_ips.is_empty() {
        return Ok(ExposedSource::Addresses(sorted(cluster_exposed_ips.to_vec())));
    }
    Ok(ExposedSource::Addresses(sorted(status_addresses.to_vec())))
}

/// An Ingress's or Service's load-balancer status: (addresses, hostnames to resolve).
pub fn load_balancer_status(
    ingress: impl IntoIterator<Item = (Option<String>, Option<String>)>,
) -> (Vec<IpAddr>, Vec<String>) {
    let mut addresses = Vec::new();
    let mut hostnames = Vec::new();
    for (ip, hostname) in ingress {
        match (ip.and_then(|ip| ip.parse::<IpAddr>().ok()), hostname.filter(|h| !h.is_empty())) {
            (Some(ip), _) => addresses.push(ip),
            (None, Some(host)) => hostnames.push(host),
            (None, None) => {}
        }
    }
    (sorted(addresses), hostnames)
}

/// The load-balancer status entries of an Ingress.
pub fn ingress_status(ingress: &Ingress) -> (Vec<IpAddr>, Vec<String>) {
    let entries = ingress
        .status
        .iter()
        .flat_map(|s| s.load_balancer.iter())
        .flat_map(|lb| lb.ingress.iter().flatten())
        .map(|i| (i.ip.clone(), i.hostname.clone()));
    load_balancer_status(entries)
}

/// The load-balancer status entries of a Service.
pub fn service_status(service: &Service) -> (Vec<IpAddr>, Vec<String>) {
    let entries = service
        .status
        .iter()
        .flat_map(|s| s.load_balancer.iter())
        .flat_map(|lb| lb.ingress.iter().flatten())
        .map(|i| (i.ip.clone(), i.hostname.clone()));
    load_balancer_status(entries)
}

/// `resourceRef`'s matchLabels and matchExpressions as a label-selector string.
pub fn label_selector(reference: &ResourceRef) -> Result<String, String> {
    let mut terms: Vec<String> = reference.match_labels.iter().flatten().map(|(k, v)| format!("{k}={v}")).collect();
    for expression in reference.match_expressions.iter().flatten() {
        let values = expression.values.clone().unwrap_or_default().join(",");
        terms.push(match expression.operator.as_str() {
            "In" => format!("{} in ({values})", expression.key),
            "NotIn" => format!("{} notin ({values})", expression.key),
            "Exists" => expression.key.clone(),
            "DoesNotExist" => format!("!{}", expression.key),
            other => return Err(format!("matchExpressions: unknown operator '{other}'")),
        });
    }
    if terms.is_empty() {
        return Err("give a name, matchLabels or matchExpressions".into());
    }
    Ok(terms.join(","))
}

fn split_list(raw: &str) -> Vec<&str> {
    raw.split(',').map(str::trim).filter(|s| !s.is_empty()).collect()
}

fn sorted(mut addresses: Vec<IpAddr>) -> Vec<IpAddr> {
    addresses.sort();
    addresses.dedup();
    addresses
}

/// RFC 1123 hostname: dot-separated labels of letters, digits and inner hyphens, at most 253 bytes.
fn is_hostname(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}
