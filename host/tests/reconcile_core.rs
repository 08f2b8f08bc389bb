//! The pure reconcile core: Gslb + local view + peer view -> DNSEndpoint and status, with the real
//! engine deciding.

mod common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use tern::api::{Endpoint, Gslb, GslbSpec, HealthStatus, StrategySpec};
use tern::engine::{EngineLimits, StrategyEngine, StrategyRegistry};
use tern::reconcile::{LocalHost, PeerView, ReconcileInputs, SpecError, StrategyRef, desired_dns_endpoint, plan, render};

fn registry() -> Arc<StrategyRegistry> {
    StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).unwrap()).unwrap()
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

fn strategy(type_: &str) -> StrategySpec {
    StrategySpec { type_: type_.into(), ..StrategySpec::default() }
}

fn hosts(health: HealthStatus, addresses: &[&str]) -> BTreeMap<String, LocalHost> {
    BTreeMap::from([("app.cloud.example.com".to_string(), LocalHost { health, addresses: ips(addresses) })])
}

fn peers(entries: &[(&str, &[&str])]) -> PeerView {
    let mut view = PeerView::default();
    for (tag, addresses) in entries {
        view.insert("app.cloud.example.com", tag, ips(addresses));
    }
    view
}

fn run(spec: &StrategySpec, local: &BTreeMap<String, LocalHost>, peers: &PeerView, previous: &[Endpoint]) -> tern::reconcile::Rendered {
    let plan = plan(spec).unwrap();
    let inputs = ReconcileInputs { gslb_key: "default/app", local_geo_tag: "eu", hosts: local, peers, previous };
    render(&plan, &StrategyRef::Named(plan.strategy.clone()), inputs, registry().as_ref())
}

/// (name, type, targets, labels) of each endpoint.
fn summary(endpoints: &[Endpoint]) -> Vec<(String, String, Vec<String>, BTreeMap<String, String>)> {
    endpoints.iter().map(|e| (e.dns_name.clone(), e.record_type.clone(), e.targets.clone(), e.labels.clone())).collect()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn round_robin_publishes_local_targets_and_the_union() {
    let out = run(&strategy("roundRobin"), &hosts(HealthStatus::Healthy, &["10.0.0.2", "10.0.0.1"]), &peers(&[("us", &["10.1.0.1"])]), &[]);
    assert_eq!(
        summary(&out.endpoints),
        [
            ("app.cloud.example.com".into(), "A".into(), vec!["10.0.0.1".into(), "10.0.0.2".into(), "10.1.0.1".into()], labels(&[("strategy", "roundRobin")])),
            ("localtargets-app.cloud.example.com".into(), "A".into(), vec!["10.0.0.1".into(), "10.0.0.2".into()], BTreeMap::new()),
        ]
    );
    assert!(out.endpoints.iter().all(|e| e.record_ttl == Some(30)));
    assert_eq!(out.service_health["app.cloud.example.com"], HealthStatus::Healthy);
    assert_eq!(out.healthy_records["app.cloud.example.com"], ["10.0.0.1", "10.0.0.2", "10.1.0.1"]);
}

#[test]
fn ipv6_gets_aaaa_records_next_to_a_records() {
    let out = run(&strategy("roundRobin"), &hosts(HealthStatus::Healthy, &["10.0.0.1", "2001:db8::1"]), &peers(&[("us", &["2001:db8:1::1"])]), &[]);
    let s = summary(&out.endpoints);
    let names: Vec<(&str, &str)> = s.iter().map(|(n, t, _, _)| (n.as_str(), t.as_str())).collect();
    assert_eq!(
        names,
        [("app.cloud.example.com", "A"), ("app.cloud.example.com", "AAAA"), ("localtargets-app.cloud.example.com", "A"), ("localtargets-app.cloud.example.com", "AAAA")]
    );
    assert_eq!(s[1].2, ["2001:db8::1", "2001:db8:1::1"]);
    assert_eq!(s[3].2, ["2001:db8::1"]);
}

#[test]
fn unhealthy_or_addressless_clusters_publish_no_local_targets() {
    let out = run(&strategy("roundRobin"), &hosts(HealthStatus::Unhealthy, &["10.0.0.1"]), &peers(&[("us", &["10.1.0.1"])]), &[]);
    assert_eq!(summary(&out.endpoints).iter().map(|e| e.0.as_str()).collect::<Vec<_>>(), ["app.cloud.example.com"]);
    assert_eq!(out.service_health["app.cloud.example.com"], HealthStatus::Unhealthy);

    // k8gb writes empty-target records here; Tern writes none.
    let out = run(&strategy("roundRobin"), &hosts(HealthStatus::Healthy, &[]), &PeerView::default(), &[]);
    assert!(out.endpoints.is_empty(), "{:?}", out.endpoints);
    assert!(out.healthy_records.is_empty());
}

#[test]
fn weights_become_k8gb_labels_even_for_dashed_geo_tags() {
    let mut spec = strategy("roundRobin");
    spec.weight = Some(BTreeMap::from([("eu".to_string(), 80), ("us-east".to_string(), 20)]));
    let out = run(&spec, &hosts(HealthStatus::Healthy, &["10.0.0.1", "10.0.0.2"]), &peers(&[("us-east", &["10.1.0.1"])]), &[]);
    let host = &out.endpoints[0];
    assert_eq!(host.dns_name, "app.cloud.example.com");
    assert_eq!(
        host.labels,
        labels(&[("strategy", "roundRobin"), ("weight-eu-0-80", "10.0.0.1"), ("weight-eu-1-80", "10.0.0.2"), ("weight-us-east-0-20", "10.1.0.1")])
    );
}

#[test]
fn failover_follows_the_primary() {
    let mut spec = strategy("failover");
    spec.primary_geo_tag = Some("us".into());
    let out = run(&spec, &hosts(HealthStatus::Healthy, &["10.0.0.1"]), &peers(&[("us", &["10.1.0.1"])]), &[]);
    assert_eq!(out.healthy_records["app.cloud.example.com"], ["10.1.0.1"]);
    let out = run(&spec, &hosts(HealthStatus::Healthy, &["10.0.0.1"]), &peers(&[("us", &[])]), &[]);
    assert_eq!(out.healthy_records["app.cloud.example.com"], ["10.0.0.1"]);
}

#[test]
fn output_is_deterministic() {
    let local = BTreeMap::from([
        ("b.cloud.example.com".to_string(), LocalHost { health: HealthStatus::Healthy, addresses: ips(&["10.0.0.9", "10.0.0.1"]) }),
        ("a.cloud.example.com".to_string(), LocalHost { health: HealthStatus::Healthy, addresses: ips(&["2001:db8::2", "10.0.0.3"]) }),
    ]);
    let mut view = PeerView::default();
    view.insert("a.cloud.example.com", "us", ips(&["10.1.0.2", "10.1.0.1"]));
    let first = run(&strategy("geoip"), &local, &view, &[]);
    let second = run(&strategy("geoip"), &local, &view, &[]);
    assert_eq!(first, second);
    let gslb = Gslb::new("app", GslbSpec { strategy: strategy("geoip"), ..GslbSpec::default() });
    let yaml = |r: &tern::reconcile::Rendered| serde_yaml::to_string(&desired_dns_endpoint(&gslb, r.endpoints.clone())).unwrap();
    assert_eq!(yaml(&first), yaml(&second));
    let order: Vec<&str> = first.endpoints.iter().map(|e| e.dns_name.as_str()).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
}

#[test]
fn a_failing_strategy_keeps_the_published_records() {
    let registry = registry();
    let chaos = registry.compile(&common::chaos_component()).unwrap();
    let mut spec = strategy("chaos");
    spec.settings = Some(BTreeMap::from([("mode".to_string(), "error".to_string())]));
    let plan = plan(&spec).unwrap();
    let previous = vec![Endpoint {
        dns_name: "app.cloud.example.com".into(),
        targets: vec!["10.9.9.9".into()],
        record_type: "A".into(),
        record_ttl: Some(30),
        labels: labels(&[("strategy", "chaos")]),
        ..Endpoint::default()
    }];
    let local = hosts(HealthStatus::Healthy, &["10.0.0.1"]);
    let view = PeerView::default();
    let inputs = ReconcileInputs { gslb_key: "default/app", local_geo_tag: "eu", hosts: &local, peers: &view, previous: &previous };
    let out = render(&plan, &StrategyRef::Compiled { origin: "configmap default/policy".into(), strategy: chaos }, inputs, registry.as_ref());
    assert_eq!(out.outcomes[0].result.as_ref().unwrap_err().kind(), "invalid_input");
    assert_eq!(out.outcomes[0].kept_records, 1);
    assert_eq!(summary(&out.endpoints)[0].2, ["10.9.9.9"], "the published host record survives");
    assert_eq!(out.endpoints[1].dns_name, "localtargets-app.cloud.example.com", "local facts stay current");
}

#[test]
fn plans_reject_bad_strategy_settings_by_field() {
    let mut spec = strategy("failover");
    spec.weight = Some(BTreeMap::from([("eu".to_string(), 1)]));
    assert_eq!(plan(&spec), Err(SpecError::WeightsNotAllowed("failover".into())));
    let mut spec = strategy("roundRobin");
    spec.weight = Some(BTreeMap::from([("eu".to_string(), 2000)]));
    assert_eq!(plan(&spec), Err(SpecError::WeightOutOfRange { tag: "eu".into(), weight: 2000 }));
    spec.weight = Some(BTreeMap::from([("eu".to_string(), 10)]));
    let p = plan(&spec).unwrap();
    assert_eq!((p.strategy.as_str(), p.label.as_str(), p.ttl_seconds), ("weighted", "roundRobin", 30));
    let mut spec = strategy("geoip");
    spec.dns_ttl_seconds = Some(-5);
    assert_eq!(plan(&spec), Err(SpecError::TtlOutOfRange(-5)));
    spec.dns_ttl_seconds = Some(90_000);
    assert!(plan(&spec).unwrap_err().to_string().starts_with("spec.strategy.dnsTtlSeconds"));
    spec.dns_ttl_seconds = Some(60);
    assert_eq!(plan(&spec).unwrap().ttl_seconds, 60);
}

#[test]
fn the_dns_endpoint_is_labelled_and_owned_like_k8gbs() {
    let mut gslb = Gslb::new("app", GslbSpec { strategy: strategy("roundRobin"), ..GslbSpec::default() });
    gslb.metadata.namespace = Some("shop".into());
    gslb.metadata.uid = Some("1234".into());
    let ep = desired_dns_endpoint(&gslb, vec![]);
    assert_eq!((ep.metadata.name.as_deref(), ep.metadata.namespace.as_deref()), (Some("app"), Some("shop")));
    let local = labels(&[("k8gb.absa.oss/dnstype", "local"), ("k8gb.io/dnstype", "local")]);
    assert_eq!(ep.metadata.labels.as_ref(), Some(&local));
    assert_eq!(ep.metadata.annotations.as_ref(), Some(&local));
    let owner = &ep.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.api_version.as_str(), owner.kind.as_str(), owner.uid.as_str()), ("k8gb.io/v1beta1", "Gslb", "1234"));
    assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
}
