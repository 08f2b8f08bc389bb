//! `tern render` reproduces k8gb's strategy table from Gslb manifests and cluster views.

mod common;

use std::process::Command;

use common::repo_root;

/// Runs `tern render` and returns the decision comment lines ("# host [strategy] -> [targets] ...").
fn render(gslbs: &str, cluster_yaml: &str) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, cluster_yaml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern")).arg("render").arg(gslbs).arg("--cluster").arg(&cluster).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "render failed: {}", String::from_utf8_lossy(&out.stderr));
    let decisions = stdout.lines().filter(|l| l.starts_with("# ")).map(|l| l.split(" ttl ").next().unwrap().to_string()).collect();
    (decisions, stdout)
}

fn examples(file: &str) -> String {
    repo_root().join("examples/render").join(file).display().to_string()
}

#[test]
fn render_reproduces_k8gbs_table_on_both_clusters() {
    let eu = std::fs::read_to_string(examples("eu.yaml")).unwrap();
    let (decisions, yaml) = render(&examples("gslbs.yaml"), &eu);
    assert_eq!(
        decisions,
        [
            "# roundrobin.cloud.example.com [roundRobin] -> [10.0.0.1, 2001:db8::1, 10.1.0.1]",
            // eu is the primary but its app is down: every other healthy cluster.
            "# failover.cloud.example.com [failover] -> [10.1.0.2]",
            "# weighted.cloud.example.com [weighted] -> [10.0.0.3, 10.1.0.3]",
            "# geoip.cloud.example.com [geoip] -> [10.0.0.4, 10.1.0.4]",
        ]
    );
    assert!(yaml.contains("weight-eu-0-80: 10.0.0.3") && yaml.contains("weight-us-0-20: 10.1.0.3"), "{yaml}");
    assert!(yaml.contains("dnsName: localtargets-roundrobin.cloud.example.com"));
    assert!(!yaml.contains("dnsName: localtargets-failover.cloud.example.com"), "an unhealthy cluster publishes no local targets");
    assert!(yaml.contains("recordType: AAAA"));

    // The secondary sees the same: the primary published nothing, so it serves itself.
    let us = std::fs::read_to_string(examples("us.yaml")).unwrap();
    let (decisions, _) = render(&examples("gslbs.yaml"), &us);
    assert_eq!(decisions[1], "# failover.cloud.example.com [failover] -> [10.1.0.2]");
    // Once eu publishes again, both follow the primary.
    let healed = us.replace("    weighted.cloud.example.com: [10.0.0.3]", "    weighted.cloud.example.com: [10.0.0.3]\n    failover.cloud.example.com: [10.0.0.2]");
    let (decisions, _) = render(&examples("gslbs.yaml"), &healed);
    assert_eq!(decisions[1], "# failover.cloud.example.com [failover] -> [10.0.0.2]");
}

#[test]
fn render_names_the_bad_field() {
    let dir = tempfile::tempdir().unwrap();
    let gslb = dir.path().join("bad.yaml");
    std::fs::write(&gslb, "apiVersion: k8gb.io/v1beta1\nkind: Gslb\nmetadata: {name: bad, namespace: demo}\nspec:\n  resourceRef: {kind: Service, name: x}\n  strategy: {type: failover, weight: {eu: 5}}\n").unwrap();
    let cluster = dir.path().join("c.yaml");
    std::fs::write(&cluster, "geoTag: eu\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tern")).arg("render").arg(&gslb).arg("--cluster").arg(&cluster).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Gslb demo/bad") && stderr.contains("spec.strategy.weight"), "{stderr}");
}
