//! The operator against a real kube-apiserver: Gslb in, DNSEndpoint and status out, reacting to
//! EndpointSlice changes at once (not at the periodic resync), keeping records through bad edits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tern::api::{DNSEndpoint, Gslb, HealthStatus};
use tern::config::OperatorConfig;
use tern::engine::{EngineLimits, StrategyEngine, StrategyRegistry};
use tern::operator::Context;
use tern_testkit::TestCluster;

/// Polls `check` every 50 ms until it returns Some, for at most 15 s.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> (T, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        if let Some(value) = check().await {
            return (value, start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// A plain HTTP/1.0 GET: (status code, body).
async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let code = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

/// (name, type, targets) of the DNSEndpoint's records, if it exists.
async fn records(api: &Api<DNSEndpoint>) -> Option<Vec<(String, String, Vec<String>)>> {
    let ep = api.get_opt("app").await.ok()??;
    Some(ep.spec.endpoints.iter().map(|e| (e.dns_name.clone(), e.record_type.clone(), e.targets.clone())).collect())
}

fn rec(name: &str, t: &str, targets: &[&str]) -> (String, String, Vec<String>) {
    (name.to_string(), t.to_string(), targets.iter().map(|s| s.to_string()).collect())
}

/// A test API server with Tern's CRDs, a namespace, and the operator running against it.
async fn setup() -> (TestCluster, String, kube::Client, tokio::task::JoinHandle<()>, std::net::SocketAddr) {
    let cluster = TestCluster::start("eu").await.expect("test API server (run tests/kube-apiserver/build.sh)");
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../chart/tern/crds");
    for file in ["k8gb.io_gslbs.yaml", "k8gb.io_zonedelegations.yaml", "externaldns.k8s.io_dnsendpoints.yaml"] {
        cluster.install_crds_from_file(crds.join(file)).await.expect(file);
    }
    let ns = cluster.create_namespace("op").await.unwrap();
    let client = cluster.client();
    let vars = [("CLUSTER_GEO_TAG", "eu"), ("DNS_ZONES", "example.com:cloud.example.com:30"), ("RECONCILE_REQUEUE_SECONDS", "300")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let config = OperatorConfig::from_vars(&vars).unwrap();
    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).unwrap()).unwrap();
    let metrics = tern::telemetry::Metrics::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let telemetry = listener.local_addr().unwrap();
    tokio::spawn(tern::telemetry::serve(listener, metrics.clone()));
    let operator = tokio::spawn(tern::operator::run(Arc::new(Context::new(client.clone(), config, registry, metrics))));
    (cluster, ns, client, operator, telemetry)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gslb_to_dns_endpoint_end_to_end() {
    let (_cluster, ns, client, operator, telemetry) = setup().await;

    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    services.create(&PostParams::default(), &serde_json::from_value(json!({
        "metadata": {"name": "app"}, "spec": {"ports": [{"port": 80}]}
    })).unwrap()).await.unwrap();
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
    let slice = |ready: bool| json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "app-1", "labels": {"kubernetes.io/service-name": "app"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {"ready": ready}}]
    });
    slices.patch("app-1", &PatchParams::apply("test").force(), &Patch::Apply(slice(true))).await.unwrap();

    let gslbs: Api<Gslb> = Api::namespaced(client.clone(), &ns);
    gslbs.create(&PostParams::default(), &serde_json::from_value(json!({
        "apiVersion": "k8gb.io/v1beta1", "kind": "Gslb",
        "metadata": {"name": "app", "annotations": {"k8gb.io/exposed-ip-addresses": "10.0.0.1, 2001:db8::1"}},
        "spec": {
            "ingress": {"rules": [
                {"host": "app.cloud.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "app", "port": {"number": 80}}}}]}},
                {"host": "app.elsewhere.org", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "app", "port": {"number": 80}}}}]}}
            ]},
            "strategy": {"type": "roundRobin"}
        }
    })).unwrap()).await.unwrap();

    // Healthy: local targets and the host record, A and AAAA; the host outside the zone is ignored.
    let endpoints: Api<DNSEndpoint> = Api::namespaced(client.clone(), &ns);
    let healthy = vec![
        rec("app.cloud.example.com", "A", &["10.0.0.1"]),
        rec("app.cloud.example.com", "AAAA", &["2001:db8::1"]),
        rec("localtargets-app.cloud.example.com", "A", &["10.0.0.1"]),
        rec("localtargets-app.cloud.example.com", "AAAA", &["2001:db8::1"]),
    ];
    let (_, took) = eventually("the DNSEndpoint", || async { records(&endpoints).await.filter(|r| *r == healthy) }).await;
    println!("Gslb created -> DNSEndpoint written in {took:?}");

    let ep = endpoints.get("app").await.unwrap();
    assert_eq!(ep.metadata.labels.as_ref().unwrap()["k8gb.io/dnstype"], "local");
    let owner = &ep.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.controller), ("Gslb", "app", Some(true)));
    let ingress = Api::<Ingress>::namespaced(client.clone(), &ns).get("app").await.expect("the embedded Ingress is created");
    assert_eq!(ingress.metadata.labels.as_ref().unwrap()["app.k8gb.io/managed-by"], "gslb");
    assert_eq!(ingress.metadata.owner_references.as_ref().unwrap()[0].kind, "Gslb");

    let (status, _) = eventually("the status", || async {
        let status = gslbs.get("app").await.ok()?.status?;
        (status.service_health.get("app.cloud.example.com") == Some(&HealthStatus::Healthy)).then_some(status)
    })
    .await;
    assert_eq!(status.geo_tag, "eu");
    assert_eq!(status.hosts, "app.cloud.example.com");
    assert_eq!(status.healthy_records["app.cloud.example.com"], ["10.0.0.1", "2001:db8::1"]);
    assert_eq!(status.load_balancer.as_ref().unwrap().exposed_ips, ["10.0.0.1", "2001:db8::1"]);
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready condition");
    assert_eq!((ready.status.as_str(), ready.observed_generation), ("True", Some(1)));

    // Probes and k8gb's metric names.
    eventually("/readyz to answer 200", || async { (http_get(telemetry, "/readyz").await.0 == 200).then_some(()) }).await;
    assert_eq!(http_get(telemetry, "/healthz").await.0, 200);
    let (_, metrics) = http_get(telemetry, "/metrics").await;
    for series in [
        format!("k8gb_gslb_reconciliation_loops_total{{namespace=\"{ns}\",name=\"app\"}}"),
        format!("k8gb_gslb_healthy_records{{namespace=\"{ns}\",name=\"app\"}} 2"),
        format!("k8gb_gslb_service_status_num{{namespace=\"{ns}\",name=\"app\",status=\"Healthy\"}} 1"),
        "tern_strategy_decisions_total{strategy=\"roundRobin\"}".to_string(),
        "tern_strategy_decision_seconds_bucket".to_string(),
    ] {
        assert!(metrics.contains(&series), "missing {series} in:\n{metrics}");
    }

    // Same inputs, byte-identical object: a reconcile triggered by an unrelated label changes nothing.
    let rv = endpoints.get("app").await.unwrap().metadata.resource_version;
    gslbs.patch("app", &PatchParams::apply("test"), &Patch::Apply(json!({"apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "metadata": {"labels": {"touched": "yes"}}}))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(endpoints.get("app").await.unwrap().metadata.resource_version, rv, "an unchanged DNSEndpoint is not rewritten");

    // The app goes unready: the records go at once (the periodic resync is 300 s).
    slices.patch("app-1", &PatchParams::apply("test").force(), &Patch::Apply(slice(false))).await.unwrap();
    let (_, took) = eventually("the records to go", || async { records(&endpoints).await.filter(|r| r.is_empty()) }).await;
    println!("EndpointSlice unready -> records withdrawn in {took:?}");
    let (_, _) = eventually("Unhealthy status", || async {
        let s = gslbs.get("app").await.ok()?.status?;
        (s.service_health.get("app.cloud.example.com") == Some(&HealthStatus::Unhealthy)).then_some(())
    })
    .await;

    // Ready again: back.
    slices.patch("app-1", &PatchParams::apply("test").force(), &Patch::Apply(slice(true))).await.unwrap();
    let (_, took) = eventually("the records to return", || async { records(&endpoints).await.filter(|r| *r == healthy) }).await;
    println!("EndpointSlice ready -> records back in {took:?}");

    // A bad edit (an address that is not one) is reported and withdraws nothing.
    gslbs.patch("app", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"k8gb.io/exposed-ip-addresses": "10.0.0.1, banana"}}}))).await.unwrap();
    let (message, _) = eventually("a ResolveFailed condition", || async {
        let s = gslbs.get("app").await.ok()?.status?;
        s.conditions.iter().find(|c| c.type_ == "Ready" && c.reason == "ResolveFailed").map(|c| c.message.clone())
    })
    .await;
    assert!(message.contains("k8gb.io/exposed-ip-addresses") && message.contains("banana"), "{message}");
    assert_eq!(records(&endpoints).await.unwrap(), healthy, "published records survive a bad edit");
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), &ns);
    let (note, _) = eventually("a Warning Event", || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items.into_iter().find(|e| e.reason.as_deref() == Some("ResolveFailed") && e.type_.as_deref() == Some("Warning")).and_then(|e| e.note)
    })
    .await;
    assert!(note.contains("banana"), "{note}");

    // The Service disappears: NotFound.
    gslbs.patch("app", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": {"k8gb.io/exposed-ip-addresses": "10.0.0.1"}}}))).await.unwrap();
    services.delete("app", &Default::default()).await.unwrap();
    eventually("NotFound status", || async {
        let s = gslbs.get("app").await.ok()?.status?;
        (s.service_health.get("app.cloud.example.com") == Some(&HealthStatus::NotFound)).then_some(())
    })
    .await;
    operator.abort();
}

/// The condition `type_` of Gslb `name`, once it has `reason`.
async fn condition(gslbs: &Api<Gslb>, name: &str, type_: &str, reason: &str) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    eventually(&format!("{type_} condition with reason {reason}"), || async {
        let s = gslbs.get(name).await.ok()?.status?;
        s.conditions.into_iter().find(|c| c.type_ == type_ && c.reason == reason)
    })
    .await
    .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_policies_load_break_and_recover() {
    let (_cluster, ns, client, operator, _) = setup().await;
    let gslbs: Api<Gslb> = Api::namespaced(client.clone(), &ns);
    let endpoints: Api<DNSEndpoint> = Api::namespaced(client.clone(), &ns);
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), &ns);
    let put_policy = |bytes: Vec<u8>| {
        let cm = k8s_openapi::api::core::v1::ConfigMap {
            metadata: kube::api::ObjectMeta { name: Some("policies".into()), ..Default::default() },
            binary_data: Some([("strategy.wasm".to_string(), k8s_openapi::ByteString(bytes))].into()),
            ..Default::default()
        };
        let configmaps = configmaps.clone();
        async move { configmaps.patch("policies", &PatchParams::apply("test").force(), &Patch::Apply(&cm)).await.unwrap() }
    };

    let gslb = |mode: &str| json!({
        "apiVersion": "k8gb.io/v1beta1", "kind": "Gslb",
        "metadata": {"name": "app", "annotations": {"k8gb.io/exposed-ip-addresses": "10.0.0.1"}},
        "spec": {
            "resourceRef": {"apiVersion": "v1", "kind": "Service", "name": "lb"},
            "strategy": {"type": "chaos", "settings": {"mode": mode}, "policyRef": {"name": "policies", "key": "strategy.wasm"}}
        }
    });
    Api::<Service>::namespaced(client.clone(), &ns).create(&PostParams::default(), &serde_json::from_value(json!({
        "metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}
    })).unwrap()).await.unwrap();
    let mut with_host = gslb("ok");
    with_host["metadata"]["annotations"]["k8gb.io/hostname"] = json!("app.cloud.example.com");
    gslbs.patch("app", &PatchParams::apply("test"), &Patch::Apply(&with_host)).await.unwrap();
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
    slices.patch("lb-1", &PatchParams::apply("test").force(), &Patch::Apply(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "lb-1", "labels": {"kubernetes.io/service-name": "lb"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.244.0.9"]}]
    }))).await.unwrap();

    // No ConfigMap yet: a clear condition, nothing published.
    let c = condition(&gslbs, "app", "Ready", "PolicyUnavailable").await;
    assert!(c.message.contains("policyRef") && c.message.contains("not found"), "{}", c.message);
    assert!(endpoints.get_opt("app").await.unwrap().is_none());

    // Not a component: named as such.
    put_policy(b"this is not wasm".to_vec()).await;
    let c = eventually("a not-WebAssembly message", || async {
        let s = gslbs.get("app").await.ok()?.status?;
        s.conditions.into_iter().find(|c| c.type_ == "Ready" && c.message.contains("not WebAssembly"))
    }).await.0;
    assert!(c.message.contains("configmap") && c.message.contains("strategy.wasm"), "{}", c.message);

    // Fixed: the ConfigMap change alone re-reconciles, and the policy decides.
    put_policy(std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../strategies/dist/chaos.wasm")).unwrap()).await;
    let want = vec![rec("app.cloud.example.com", "A", &["10.0.0.1"]), rec("localtargets-app.cloud.example.com", "A", &["10.0.0.1"])];
    eventually("records from the policy", || async { records(&endpoints).await.filter(|r| *r == want) }).await;
    condition(&gslbs, "app", "Ready", "Reconciled").await;

    // The policy refuses this input: StrategyFailed says why, the records stay.
    with_host["spec"]["strategy"]["settings"]["mode"] = json!("error");
    gslbs.patch("app", &PatchParams::apply("test"), &Patch::Apply(&with_host)).await.unwrap();
    let c = condition(&gslbs, "app", "StrategyFailed", "StrategyError").await;
    assert!(c.message.contains("refusing this input"), "{}", c.message);
    assert_eq!(c.status, "True");
    assert_eq!(records(&endpoints).await.unwrap(), want, "a failing policy withdraws nothing");
    operator.abort();
}
