//! The generated CRDs installed into a real kube-apiserver: served, and their validation enforced
//! by the server (so a bad Gslb is refused before Tern ever sees it).

use kube::api::{Api, PostParams};
use serde_json::json;
use tern::api::{Gslb, LegacyGslb, ZoneDelegation};
use tern_testkit::TestCluster;

async fn create<K>(api: &Api<K>, object: serde_json::Value) -> Result<K, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), &serde_json::from_value(object).expect("a well-formed object")).await
}

fn rejection(result: Result<impl std::fmt::Debug, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) if status.code == 422 => status.message,
        other => panic!("expected the API server to refuse it with 422, got {other:?}"),
    }
}

#[tokio::test]
async fn generated_crds_are_served_and_enforced() {
    let cluster = TestCluster::start("eu").await.expect("test API server (run tests/kube-apiserver/build.sh)");
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../chart/tern/crds");
    for file in ["k8gb.io_gslbs.yaml", "k8gb.absa.oss_gslbs.yaml", "k8gb.io_zonedelegations.yaml", "externaldns.k8s.io_dnsendpoints.yaml"] {
        cluster.install_crds_from_file(crds.join(file)).await.expect(file);
    }
    let ns = cluster.create_namespace("crds").await.unwrap();
    let gslbs: Api<Gslb> = Api::namespaced(cluster.client(), &ns);

    // A k8gb Gslb, unchanged, is accepted; Tern's additions too.
    let ok = create(&gslbs, json!({
        "apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "metadata": {"name": "app"},
        "spec": {
            "resourceRef": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "matchLabels": {"app": "shop"}},
            "strategy": {"type": "roundRobin", "weight": {"eu": 80, "us": 20}, "dnsTtlSeconds": 60,
                         "settings": {"x": "y"}, "policyRef": {"name": "policies", "key": "p.wasm"}},
            "serviceHealthPolicy": "All"
        }
    })).await.expect("a valid Gslb is accepted");
    assert_eq!(ok.spec.strategy.weight.unwrap()["eu"], 80);

    let legacy: Api<LegacyGslb> = Api::namespaced(cluster.client(), &ns);
    create(&legacy, json!({
        "apiVersion": "k8gb.absa.oss/v1beta1", "kind": "Gslb", "metadata": {"name": "old"},
        "spec": {"ingress": {"rules": [{"host": "old.cloud.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "app", "port": {"number": 80}}}}]}}]},
                 "strategy": {"type": "failover", "primaryGeoTag": "eu"}}
    })).await.expect("a legacy Gslb is accepted");

    // Weights with failover, weights out of range, a negative TTL: refused, naming the problem.
    let bad = |strategy: serde_json::Value| json!({
        "apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "metadata": {"name": "bad"}, "spec": {"strategy": strategy}
    });
    let msg = rejection(create(&gslbs, bad(json!({"type": "failover", "primaryGeoTag": "eu", "weight": {"eu": 1}}))).await);
    assert!(msg.contains("weight is only allowed with a weighting strategy"), "{msg}");
    let msg = rejection(create(&gslbs, bad(json!({"type": "roundRobin", "weight": {"eu": 1001}}))).await);
    assert!(msg.contains("weights must be between 0 and 1000"), "{msg}");
    let msg = rejection(create(&gslbs, bad(json!({"type": "roundRobin", "dnsTtlSeconds": -1}))).await);
    assert!(msg.contains("dnsTtlSeconds"), "{msg}");
    let raw: Api<kube::api::DynamicObject> =
        Api::namespaced_with(cluster.client(), &ns, &kube::api::ApiResource::erase::<Gslb>(&()));
    let msg = rejection(create(&raw, bad(json!({"weight": {}}))).await);
    assert!(msg.contains("type"), "{msg}");
    let msg = rejection(create(&raw, json!({
        "apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "metadata": {"name": "bad"},
        "spec": {"strategy": {"type": "roundRobin"}, "serviceHealthPolicy": "Some"}
    })).await);
    assert!(msg.contains("serviceHealthPolicy"), "{msg}");

    // ZoneDelegation keeps k8gb's rules.
    let zds: Api<ZoneDelegation> = Api::all(cluster.client());
    create(&zds, json!({"apiVersion": "k8gb.io/v1beta1", "kind": "ZoneDelegation", "metadata": {"name": "cloud-example-com"},
        "spec": {"loadBalancedZone": "cloud.example.com", "parentZone": "example.com", "dnsZoneNegTTL": 30}})).await.expect("valid zone");
    let msg = rejection(create(&zds, json!({"apiVersion": "k8gb.io/v1beta1", "kind": "ZoneDelegation", "metadata": {"name": "bad"},
        "spec": {"loadBalancedZone": "cloud.other.com", "parentZone": "example.com", "dnsZoneNegTTL": 30}})).await);
    assert!(msg.contains("loadBalancedZone must be subdomain"), "{msg}");
}
