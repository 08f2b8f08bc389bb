//! The committed strategy builds (strategies/dist) are exactly what their sources produce.

mod common;

use common::repo_root;
use tern::strategy_build::{BuildRequest, build_components};

#[test]
fn committed_builds_match_their_sources() {
    let root = repo_root();
    let out = tempfile::tempdir().unwrap();
    let built = build_components(&BuildRequest {
        crate_dir: root.join("strategies"),
        packages: vec![],
        out_dir: out.path().to_path_buf(),
        target_dir: None,
    })
    .expect("the strategies build (needs the wasm32-unknown-unknown target)");
    let names: Vec<&str> = built.iter().map(|b| b.strategy.as_str()).collect();
    assert_eq!(names, ["chaos", "failover", "geoip", "roundRobin", "weighted"]);

    let sums = std::fs::read_to_string(root.join("strategies/dist/SHA256SUMS")).expect("SHA256SUMS is committed");
    let mut drift = Vec::new();
    for component in &built {
        let file = format!("{}.wasm", component.strategy);
        let committed = std::fs::read(root.join("strategies/dist").join(&file)).unwrap_or_default();
        let digest = tern::engine::Digest::of(&component.bytes).to_string();
        if committed != component.bytes || !sums.lines().any(|l| l == format!("{digest}  {file}")) {
            drift.push(file);
        }
    }
    assert!(
        drift.is_empty(),
        "strategies/dist is stale for {drift:?}: run `cargo run -p tern -- strategy build strategies --out strategies/dist` \
         and `(cd strategies/dist && sha256sum *.wasm > SHA256SUMS)`, then commit"
    );
}
