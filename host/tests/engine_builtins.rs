//! The built-in strategies: k8gb's decision table through `tern strategy eval`, and the WebAssembly
//! builds agreeing with the native reference implementations on generated requests.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::*;
use proptest::prelude::*;
use tern::engine::reference;
use tern::engine::validate::{DecisionLimits, validate_decision};
use tern::engine::{CallError, ClusterView, EngineLimits, Health, StrategyEngine, StrategyFailure, StrategyRegistry, StrategyRequest};

use Health::{Healthy, NotFound, Unhealthy};

/// Runs `tern strategy eval` on `request` and returns (addresses with weights, reason).
fn eval(strategy: &str, request: &StrategyRequest) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("request.yaml");
    std::fs::write(&path, serde_yaml::to_string(request).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern"))
        .args(["strategy", "eval", "--strategy", strategy, "--request"])
        .arg(&path)
        .output()
        .expect("tern runs");
    assert!(out.status.success(), "tern strategy eval failed: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON decision");
    assert_eq!(json["strategy"], strategy);
    assert_eq!(json["ttlSeconds"], 30);
    let targets = json["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| match t["weight"].as_u64() {
            Some(w) => format!("{}:{}={w}", t["geoTag"].as_str().unwrap(), t["address"].as_str().unwrap()),
            None => format!("{}:{}", t["geoTag"].as_str().unwrap(), t["address"].as_str().unwrap()),
        })
        .collect();
    (targets, json["reason"].as_str().unwrap().to_string())
}

fn eu(h: Health) -> ClusterView {
    cluster("eu", h, &["10.0.0.2", "10.0.0.1"])
}
fn us(h: Health) -> ClusterView {
    cluster("us", h, &["10.1.0.1"])
}
fn ap(h: Health) -> ClusterView {
    cluster("ap", h, &["2001:db8::1", "10.2.0.1"])
}
/// A peer that did not answer: no addresses.
fn silent(tag: &str) -> ClusterView {
    cluster(tag, NotFound, &[])
}

const EU: [&str; 2] = ["eu:10.0.0.1", "eu:10.0.0.2"];
const US: [&str; 1] = ["us:10.1.0.1"];
const AP: [&str; 2] = ["ap:10.2.0.1", "ap:2001:db8::1"];

fn cat(parts: &[&[&str]]) -> Vec<String> {
    parts.iter().flat_map(|p| p.iter().map(|s| s.to_string())).collect()
}

#[test]
fn round_robin_and_geoip_follow_k8gbs_table() {
    for strategy in ["roundRobin", "geoip"] {
        let cases: Vec<(&str, StrategyRequest, Vec<String>)> = vec![
            ("local healthy, peers seen", request("eu", None, vec![eu(Healthy), us(Healthy), ap(Healthy)]), cat(&[&AP, &EU, &US])),
            ("local unhealthy, peers seen", request("eu", None, vec![eu(Unhealthy), us(Healthy), ap(Healthy)]), cat(&[&AP, &US])),
            ("local not found, peers seen", request("eu", None, vec![eu(NotFound), us(Healthy)]), cat(&[&US])),
            ("local healthy, no peers seen", request("eu", None, vec![eu(Healthy), silent("us")]), cat(&[&EU])),
            ("local healthy, no peers configured", request("eu", None, vec![eu(Healthy)]), cat(&[&EU])),
            ("unhealthy everywhere", request("eu", None, vec![eu(Unhealthy), silent("us")]), vec![]),
            ("healthy but no addresses", request("eu", None, vec![cluster("eu", Healthy, &[])]), vec![]),
        ];
        for (name, req, want) in cases {
            assert_eq!(eval(strategy, &req).0, want, "{strategy}: {name}");
        }
    }
    let (_, reason) = eval("geoip", &request("eu", None, vec![eu(Healthy), us(Healthy)]));
    assert_eq!(reason, "geoip: healthy clusters: eu, us; narrowed per client at query time");
}

#[test]
fn failover_follows_k8gbs_table() {
    let cases: Vec<(&str, StrategyRequest, Vec<String>, &str)> = vec![
        ("primary healthy, asked on the primary", request("eu", Some("eu"), vec![eu(Healthy), us(Healthy)]), cat(&[&EU]), "failover: primary eu is healthy"),
        ("primary healthy, asked on a secondary", request("us", Some("eu"), vec![eu(Healthy), us(Healthy)]), cat(&[&EU]), "failover: primary eu is healthy"),
        ("primary unhealthy, asked on the primary", request("eu", Some("eu"), vec![eu(Unhealthy), us(Healthy), ap(Healthy)]), cat(&[&AP, &US]), "failover: primary eu is down, serving healthy clusters: ap, us"),
        ("primary unseen, asked on a healthy secondary", request("us", Some("eu"), vec![silent("eu"), us(Healthy), ap(Healthy)]), cat(&[&AP, &US]), "failover: primary eu is down, serving healthy clusters: ap, us"),
        ("primary unseen, asked on an unhealthy secondary", request("us", Some("eu"), vec![silent("eu"), us(Unhealthy), ap(Healthy)]), cat(&[&AP]), "failover: primary eu is down, serving healthy clusters: ap"),
        ("primary healthy, no peers", request("eu", Some("eu"), vec![eu(Healthy)]), cat(&[&EU]), "failover: primary eu is healthy"),
        ("no primary configured", request("eu", None, vec![eu(Healthy), us(Healthy)]), cat(&[&EU, &US]), "failover: no primaryGeoTag, answering like roundRobin: healthy clusters: eu, us"),
        ("primary matches no cluster", request("eu", Some("zz"), vec![eu(Healthy), us(Healthy)]), cat(&[&EU, &US]), "failover: primary zz is not a known cluster, answering like roundRobin: healthy clusters: eu, us"),
        ("everything unhealthy", request("eu", Some("eu"), vec![eu(Unhealthy), us(Unhealthy)]), vec![], "failover: primary eu is down, serving healthy clusters: none"),
        ("IPv6 primary passes through", request("eu", Some("ap"), vec![eu(Healthy), ap(Healthy)]), cat(&[&AP]), "failover: primary ap is healthy"),
    ];
    for (name, req, want, reason) in cases {
        assert_eq!(eval("failover", &req), (want, reason.to_string()), "failover: {name}");
    }
}

#[test]
fn weighted_carries_weights_and_drains_missing_clusters() {
    let weights = |pairs: &[(&str, u32)]| pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>();
    let mut req = request("eu", None, vec![eu(Healthy), us(Healthy), ap(Healthy)]);
    req.weights = weights(&[("eu", 80), ("us", 20)]);
    let (targets, reason) = eval("weighted", &req);
    assert_eq!(targets, ["ap:10.2.0.1=0", "ap:2001:db8::1=0", "eu:10.0.0.1=80", "eu:10.0.0.2=80", "us:10.1.0.1=20"]);
    assert_eq!(reason, "weighted: ap=0 eu=80 us=20");

    req.weights = weights(&[("eu", 80), ("us", 20)]);
    req.clusters = vec![eu(Unhealthy), us(Healthy)];
    assert_eq!(eval("weighted", &req).0, ["us:10.1.0.1=20"]);

    req.weights.clear();
    req.clusters = vec![eu(Healthy), us(Healthy)];
    assert_eq!(eval("weighted", &req).0, ["eu:10.0.0.1=1", "eu:10.0.0.2=1", "us:10.1.0.1=1"]);

    req.clusters = vec![eu(Unhealthy)];
    assert_eq!(eval("weighted", &req), (vec![], "weighted: no healthy cluster".to_string()));
}

#[test]
fn eval_reports_bad_input_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "host: x\nlocalGeoTag: eu\nclusters: []\nbogus: 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern")).args(["strategy", "eval", "--strategy", "roundRobin", "--request"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a valid request") && stderr.contains("bogus"), "{stderr}");

    let good = dir.path().join("good.yaml");
    std::fs::write(&good, serde_yaml::to_string(&request("eu", None, vec![eu(Healthy)])).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern")).args(["strategy", "eval", "--strategy", "nope", "--request"]).arg(&good).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no strategy named 'nope'"));
}

#[test]
fn strategy_list_shows_the_builtins() {
    let out = Command::new(env!("CARGO_BIN_EXE_tern")).args(["strategy", "list"]).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for name in reference::BUILTIN_NAMES {
        assert!(stdout.lines().any(|l| l.starts_with(name) && l.contains("built-in") && l.contains("sha256:")), "{stdout}");
    }
}

// ---- WebAssembly builds versus the native reference implementations ----

fn arb_request() -> impl Strategy<Value = StrategyRequest> {
    let tags = ["ap", "eu", "us", "sa", "af"];
    let address = prop_oneof![
        any::<[u8; 4]>().prop_map(|o| std::net::IpAddr::from(o)),
        any::<[u16; 8]>().prop_map(|s| std::net::IpAddr::from(s)),
        (0u8..4).prop_map(|i| std::net::IpAddr::from([10, 0, 0, i])),
    ];
    let health = prop_oneof![Just(Healthy), Just(Unhealthy), Just(NotFound)];
    let cluster = (health, proptest::collection::vec(address, 0..5));
    (
        proptest::sample::subsequence(tags.to_vec(), 0..=5),
        proptest::collection::vec(cluster, 5),
        proptest::option::of(proptest::sample::select(vec!["eu", "us", "ap", "zz"])),
        proptest::collection::btree_map(proptest::sample::select(tags.to_vec()), 0u32..1000, 0..4),
        proptest::option::weighted(0.1, "[a-z]{1,8}"),
        any::<u64>(),
    )
        .prop_map(|(present, clusters, primary, weights, setting, seed)| StrategyRequest {
            host: "app.cloud.example.com".into(),
            local_geo_tag: "eu".into(),
            primary_geo_tag: primary.map(str::to_string),
            weights: weights.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            settings: setting.map(|k| (k, "1".to_string())).into_iter().collect(),
            clusters: present
                .into_iter()
                .zip(clusters)
                .map(|(tag, (health, addresses))| ClusterView { geo_tag: tag.to_string(), health, addresses })
                .collect(),
            default_ttl_seconds: 30,
            seed,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn wasm_builds_agree_with_the_reference(req in arb_request()) {
        thread_local! {
            static REGISTRY: std::sync::Arc<StrategyRegistry> =
                StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).unwrap()).unwrap();
        }
        let normalized = req.clone().normalized().unwrap();
        for name in reference::BUILTIN_NAMES {
            let wasm = REGISTRY.with(|r| r.decide(name, &req));
            let native = reference::decide(name, &normalized).expect("a built-in");
            match (wasm, native) {
                (Ok(w), Ok(n)) => {
                    let n = validate_decision(&normalized, n, &DecisionLimits::default()).expect("reference is valid");
                    prop_assert_eq!(w, n, "{}", name);
                }
                (Err(CallError::Strategy(StrategyFailure::InvalidSettings(w))), Err(n)) => prop_assert_eq!(w, n),
                (w, n) => prop_assert!(false, "{name}: wasm {w:?} but native {n:?}"),
            }
        }
    }
}
