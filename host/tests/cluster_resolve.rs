//! k8gb's rules for hosts, health and exposed addresses (reference §2.4–2.6), as tables.

use std::net::IpAddr;

use serde_json::json;
use tern::api::{HealthStatus, ServiceHealthPolicy};
use tern::cluster::resolve::*;

use HealthStatus::{Healthy, NotFound, Unhealthy};
use ServiceHealthPolicy::{All, Any};
use ServiceState::{Missing, Present};

const READY: ServiceState = Present { ready: true };
const UNREADY: ServiceState = Present { ready: false };

#[test]
fn host_health_follows_the_policy() {
    let cases: &[(ServiceHealthPolicy, &[ServiceState], HealthStatus)] = &[
        (Any, &[], NotFound),
        (Any, &[Missing], NotFound),
        (Any, &[Missing, Missing], NotFound),
        (Any, &[UNREADY], Unhealthy),
        (Any, &[READY], Healthy),
        (Any, &[READY, UNREADY], Healthy),
        (Any, &[Missing, UNREADY], Unhealthy),
        (Any, &[Missing, READY], Healthy),
        (Any, &[UNREADY, UNREADY], Unhealthy),
        (All, &[], NotFound),
        (All, &[READY], Healthy),
        (All, &[READY, READY], Healthy),
        (All, &[READY, UNREADY], Unhealthy),
        (All, &[READY, Missing], NotFound),
        (All, &[UNREADY, Missing], NotFound),
        (All, &[UNREADY], Unhealthy),
        (All, &[Missing], NotFound),
    ];
    for (policy, services, want) in cases {
        assert_eq!(host_health(services, *policy), *want, "{policy:?} {services:?}");
    }
}

fn slice(endpoints: serde_json::Value) -> k8s_openapi::api::discovery::v1::EndpointSlice {
    serde_json::from_value(json!({"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": endpoints})).unwrap()
}

#[test]
fn a_service_is_ready_when_an_endpoint_with_an_address_is_not_unready() {
    assert!(service_ready(&[slice(json!([{"addresses": ["10.0.0.1"]}]))]), "ready unset counts as ready");
    assert!(service_ready(&[slice(json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]))]));
    assert!(!service_ready(&[slice(json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": false}}]))]));
    assert!(!service_ready(&[slice(json!([{"addresses": [], "conditions": {"ready": true}}]))]));
    assert!(!service_ready(&[]));
    assert!(!service_ready(&[slice(json!(null))]));
    assert!(service_ready(&[
        slice(json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": false}}])),
        slice(json!([{"addresses": ["10.0.0.2"], "conditions": {"ready": true, "serving": false}}])),
    ]));
}

#[test]
fn ingress_rules_give_hosts_and_backing_services() {
    let ingress: k8s_openapi::api::networking::v1::Ingress = serde_json::from_value(json!({
        "metadata": {"name": "shop", "namespace": "web"},
        "spec": {"rules": [
            {"host": "b.cloud.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "front", "port": {"number": 80}}}},
                {"path": "/api", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"number": 80}}}},
                {"path": "/static", "pathType": "Prefix", "backend": {"resource": {"kind": "Bucket", "name": "s"}}}
            ]}},
            {"host": "a.cloud.example.com"},
            {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "x", "port": {"number": 80}}}}]}},
            {"host": "b.cloud.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "front", "port": {"number": 8080}}}}]}}
        ]},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"ip": "2001:db8::1"}, {"hostname": "lb.example.net"}, {"ip": "10.0.0.1"}]}}
    })).unwrap();
    let servers = servers_from_ingress(&ingress);
    let summary: Vec<(String, Vec<String>)> =
        servers.iter().map(|s| (s.host.clone(), s.services.iter().map(|n| format!("{}/{}", n.namespace, n.name)).collect())).collect();
    assert_eq!(
        summary,
        [
            ("a.cloud.example.com".to_string(), vec![]),
            ("b.cloud.example.com".to_string(), vec!["web/api".to_string(), "web/front".to_string()]),
        ]
    );
    let (addresses, hostnames) = ingress_status(&ingress);
    assert_eq!(addresses, ips(&["10.0.0.1", "10.0.0.2", "2001:db8::1"]));
    assert_eq!(hostnames, ["lb.example.net"]);
}

#[test]
fn a_load_balancer_service_needs_the_hostname_annotation() {
    let service = |type_: &str| -> k8s_openapi::api::core::v1::Service {
        serde_json::from_value(json!({"metadata": {"name": "app", "namespace": "web"}, "spec": {"type": type_},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}})).unwrap()
    };
    let server = server_from_service(&service("LoadBalancer"), Some("app.cloud.example.com")).unwrap();
    assert_eq!(server.host, "app.cloud.example.com");
    assert_eq!(server.services[0].name, "app");
    assert_eq!(server_from_service(&service("LoadBalancer"), None), Err(ResolveError::MissingHostname));
    assert_eq!(server_from_service(&service("LoadBalancer"), Some("  ")), Err(ResolveError::MissingHostname));
    assert_eq!(server_from_service(&service("ClusterIP"), Some("a.b")), Err(ResolveError::NotLoadBalancer("web/app".into())));
    assert_eq!(service_status(&service("LoadBalancer")).0, ips(&["192.0.2.7"]));
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

#[test]
fn exposed_addresses_follow_k8gbs_precedence() {
    let cluster = ips(&["172.16.0.1"]);
    let status = ips(&["10.0.0.1"]);
    assert_eq!(
        exposed_source(Some("lb1.example.net, lb2.example.net"), Some("192.0.2.1"), &cluster, &status),
        Ok(ExposedSource::Hostnames(vec!["lb1.example.net".into(), "lb2.example.net".into()]))
    );
    assert_eq!(exposed_source(None, Some("192.0.2.2, 192.0.2.1,2001:db8::5"), &cluster, &status), Ok(ExposedSource::Addresses(ips(&["192.0.2.1", "192.0.2.2", "2001:db8::5"]))));
    assert_eq!(exposed_source(None, None, &cluster, &status), Ok(ExposedSource::Addresses(cluster.clone())));
    assert_eq!(exposed_source(None, None, &[], &status), Ok(ExposedSource::Addresses(status.clone())));
    assert_eq!(exposed_source(None, Some("192.0.2.1,not-an-ip"), &[], &[]), Err(ResolveError::BadExposedIp("not-an-ip".into())));
    assert_eq!(exposed_source(Some("ok.example.net,bad_name!"), None, &[], &[]), Err(ResolveError::BadExposedHostname("bad_name!".into())));
    assert!(exposed_source(None, Some("1.2.3.999"), &[], &[]).unwrap_err().to_string().contains("k8gb.io/exposed-ip-addresses"));
}

#[test]
fn resource_refs_become_label_selectors() {
    let reference = |v: serde_json::Value| -> tern::api::gslb::ResourceRef { serde_json::from_value(v).unwrap() };
    let r = reference(json!({"kind": "Ingress", "matchLabels": {"app": "shop", "tier": "web"},
        "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "stage"]},
                             {"key": "canary", "operator": "DoesNotExist"}, {"key": "team", "operator": "Exists"},
                             {"key": "zone", "operator": "NotIn", "values": ["x"]}]}));
    assert_eq!(label_selector(&r).unwrap(), "app=shop,tier=web,env in (prod,stage),!canary,team,zone notin (x)");
    assert!(label_selector(&reference(json!({"kind": "Ingress"}))).is_err());
    let bad = reference(json!({"matchExpressions": [{"key": "a", "operator": "Near"}]}));
    assert!(label_selector(&bad).unwrap_err().contains("Near"));
}
