//! The committed CRDs (chart/tern/crds) are exactly what the Rust API types generate, and they keep
//! k8gb's wire contract.

use std::path::PathBuf;

use tern::api::crd::{dns_endpoint_crd, tern_crds, to_yaml};

fn chart_crds() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../chart/tern/crds")
}

#[test]
fn committed_crds_match_the_types() {
    let mut stale = Vec::new();
    let mut all = tern_crds();
    all.push(dns_endpoint_crd());
    for (file, crd) in all {
        let committed = std::fs::read_to_string(chart_crds().join(file)).unwrap_or_default();
        if committed != to_yaml(&crd).unwrap() {
            stale.push(file);
        }
    }
    assert!(stale.is_empty(), "chart/tern/crds is stale for {stale:?}: run `cargo run -p tern -- crd --with-dns-endpoint --out chart/tern/crds`");
}

#[test]
fn gslb_crds_keep_k8gbs_contract() {
    let crds = tern_crds();
    let (_, gslb) = &crds[0];
    assert_eq!(gslb.spec.group, "k8gb.io");
    assert_eq!(gslb.spec.names.kind, "Gslb");
    assert_eq!(gslb.spec.scope, "Namespaced");
    let version = &gslb.spec.versions[0];
    assert_eq!(version.name, "v1beta1");
    assert!(version.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some(), "status subresource");
    let columns: Vec<(&str, &str, i32)> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| (c.name.as_str(), c.json_path.as_str(), c.priority.unwrap_or(0)))
        .collect();
    assert_eq!(columns, [("strategy", ".spec.strategy.type", 0), ("geoTag", ".status.geoTag", 0), ("hosts", ".status.hosts", 1)]);

    let schema = serde_json::to_value(version.schema.as_ref().unwrap()).unwrap();
    let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["required"], serde_json::json!(["strategy"]));
    for field in ["ingress", "resourceRef", "strategy", "serviceHealthPolicy"] {
        assert!(spec["properties"].get(field).is_some(), "spec.{field}");
    }
    let strategy = &spec["properties"]["strategy"];
    assert_eq!(strategy["required"], serde_json::json!(["type"]));
    for field in ["type", "weight", "primaryGeoTag", "dnsTtlSeconds", "splitBrainThresholdSeconds", "settings", "policyRef"] {
        assert!(strategy["properties"].get(field).is_some(), "spec.strategy.{field}");
    }
    assert!(spec["properties"]["ingress"]["properties"].get("backend").is_some(), "k8gb's ingress copy names it backend");
    let status = &schema["openAPIV3Schema"]["properties"]["status"]["properties"];
    for field in ["serviceHealth", "healthyRecords", "geoTag", "hosts", "loadBalancer", "servers", "conditions"] {
        assert!(status.get(field).is_some(), "status.{field}");
    }
    assert_eq!(spec["properties"]["serviceHealthPolicy"]["enum"], serde_json::json!(["Any", "All"]));

    let (_, legacy) = &crds[2];
    assert_eq!(legacy.spec.group, "k8gb.absa.oss");
    assert_eq!(legacy.spec.names.kind, "Gslb");
    let legacy_spec = serde_json::to_value(legacy.spec.versions[0].schema.as_ref().unwrap()).unwrap();
    assert!(legacy_spec["openAPIV3Schema"]["properties"]["spec"]["properties"].get("serviceHealthPolicy").is_none());

    let (_, zd) = &crds[1];
    assert_eq!((zd.spec.group.as_str(), zd.spec.scope.as_str()), ("k8gb.io", "Cluster"));
    assert_eq!(zd.spec.names.short_names, Some(vec!["zd".to_string()]));
    let zd_schema = serde_json::to_string(&zd.spec.versions[0].schema).unwrap();
    assert!(zd_schema.contains("dnsZoneNegTTL") && zd_schema.contains("loadBalancedZone must be subdomain"));
}
