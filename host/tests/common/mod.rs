//! Shared helpers for the engine tests: requests, and components built from core WAT.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use tern::engine::{ClusterView, Health, StrategyRequest};

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn cluster(tag: &str, health: Health, ips: &[&str]) -> ClusterView {
    ClusterView {
        geo_tag: tag.to_string(),
        health,
        addresses: ips.iter().map(|s| s.parse::<IpAddr>().expect("test IP")).collect(),
    }
}

pub fn request(local: &str, primary: Option<&str>, clusters: Vec<ClusterView>) -> StrategyRequest {
    StrategyRequest {
        host: "app.cloud.example.com".to_string(),
        local_geo_tag: local.to_string(),
        primary_geo_tag: primary.map(str::to_string),
        weights: BTreeMap::new(),
        settings: BTreeMap::new(),
        clusters,
        default_ttl_seconds: 30,
        seed: 7,
    }
}

/// The chaos guest (strategies/chaos), a Rust strategy that misbehaves on request.
pub fn chaos_component() -> Vec<u8> {
    std::fs::read(repo_root().join("strategies/dist/chaos.wasm")).expect("strategies/dist/chaos.wasm is committed")
}

/// A component for `world` of the WIT packages in `wit_sources` (the contract is always loaded first),
/// whose core module is `core_wat`.
pub fn component_from_core_wat(extra_wit: &[&str], world: &str, core_wat: &str) -> Vec<u8> {
    let mut resolve = wit_parser::Resolve::default();
    let mut last = resolve.push_dir(repo_root().join("wit")).expect("contract WIT").0;
    for source in extra_wit {
        last = resolve.push_str("extra.wit", source).expect("test WIT");
    }
    let world = resolve.select_world(&[last], Some(world)).expect("world");
    let mut core = wat::parse_str(core_wat).expect("core WAT");
    wit_component::embed_component_metadata(&mut core, &resolve, world, wit_component::StringEncoding::UTF8)
        .expect("embed metadata");
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&core)
        .and_then(|mut e| e.encode())
        .expect("componentize")
}

/// A core module implementing the contract whose `decide` runs `decide_body` (which must leave the
/// address of a result in memory on the stack), with `pages` of memory and `extra` module fields.
///
/// Memory map: the return area is at 16; static data from 1024; the bump allocator (for the
/// request the host writes in) starts at 65536.
pub fn strategy_core_wat(pages: u32, decide_body: &str, extra: &str) -> String {
    format!(
        r#"(module
  (memory (export "memory") {pages})
  (global $heap (mut i32) (i32.const 65536))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $p i32)
    (local.set $p (i32.and (i32.add (global.get $heap) (i32.const 7)) (i32.const -8)))
    (global.set $heap (i32.add (local.get $p) (local.get 3)))
    (local.get $p))
  (func (export "tern:strategy/strategy@0.1.0#validate-settings") (param i32 i32) (result i32)
    (i32.store8 (i32.const 16) (i32.const 0))
    (i32.const 16))
  (func (export "tern:strategy/strategy@0.1.0#decide")
    (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i64) (result i32)
    {decide_body})
  {extra}
)"#
    )
}

/// WAT that stores `value` as an i32 at `addr`.
pub fn store(addr: u32, value: u32) -> String {
    format!("(i32.store (i32.const {addr}) (i32.const {value}))\n")
}

/// WAT that writes an ok decision at 16: `targets` (ptr, len) and `reason` (ptr, len), TTL none.
pub fn ok_decision(targets: (u32, u32), reason: (u32, u32)) -> String {
    [store(16, 0), store(20, targets.0), store(24, targets.1), store(28, 0), store(36, reason.0), store(40, reason.1)]
        .concat()
        + "(i32.const 16)"
}

/// WAT that writes one 36-byte `target` record at `at`: geo tag (ptr, len) and an IPv4 address.
pub fn ipv4_target(at: u32, geo: (u32, u32), octets: [u8; 4]) -> String {
    let ip = u32::from_le_bytes(octets);
    [
        store(at, geo.0),
        store(at + 4, geo.1),
        format!("(i32.store8 (i32.const {}) (i32.const 0))\n", at + 8),
        format!("(i32.store16 (i32.const {}) (i32.const {}))\n", at + 10, ip & 0xffff),
        format!("(i32.store16 (i32.const {}) (i32.const {}))\n", at + 12, ip >> 16),
        format!("(i32.store8 (i32.const {}) (i32.const 0))\n", at + 28),
    ]
    .concat()
}
