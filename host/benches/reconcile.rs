//! Reconcile throughput of the pure core: N Gslbs, one host each, three clusters (this one and two
//! peers), decided by the real WebAssembly strategies, as a ratio to the same work with the native
//! reference strategies measured in the same run.
//!
//! Run: `cargo bench -p tern --bench reconcile`

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

use tern::api::{HealthStatus, StrategySpec};
use tern::engine::reference;
use tern::engine::validate::{DecisionLimits, validate_decision};
use tern::engine::{CallError, Decision, EngineLimits, StrategyEngine, StrategyRegistry, StrategyRequest};
use tern::reconcile::{Decider, LocalHost, PeerView, ReconcileInputs, StrategyRef, plan, render};

/// The native reference strategies behind the same `Decider` seam.
struct Native;

impl Decider for Native {
    fn decide(&self, strategy: &StrategyRef, request: &StrategyRequest) -> Result<Decision, CallError> {
        let StrategyRef::Named(name) = strategy else { unreachable!("bench uses named strategies") };
        let normalized = request.clone().normalized()?;
        let raw = reference::decide(name, &normalized).expect("built-in").expect("decides");
        Ok(validate_decision(&normalized, raw, &DecisionLimits::default())?)
    }
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (100 per second on Linux).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or_default().split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0) + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn main() {
    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).expect("engine")).expect("built-ins");
    let strategies = ["roundRobin", "failover", "geoip", "weighted"];
    println!("pure reconcile core: one host per Gslb, 3 clusters (local + 2 peers), strategies rotating");
    println!("{:>8} {:>14} {:>14} {:>12} {:>8}", "gslbs", "native", "wasm", "wasm cpu", "ratio");
    for n in [1_000usize, 10_000] {
        let mut peers = PeerView::default();
        let mut work = Vec::with_capacity(n);
        for i in 0..n {
            let host = format!("app{i}.cloud.example.com");
            let ip = |c: u8| IpAddr::from([10, c, (i / 256) as u8, (i % 256) as u8]);
            peers.insert(&host, "us", vec![ip(1)]);
            peers.insert(&host, "ap", vec![ip(2)]);
            let mut spec = StrategySpec { type_: strategies[i % 4].into(), ..StrategySpec::default() };
            if spec.type_ == "failover" {
                spec.primary_geo_tag = Some("us".into());
            }
            if spec.type_ == "weighted" {
                spec.weight = Some(BTreeMap::from([("eu".to_string(), 50), ("us".to_string(), 30), ("ap".to_string(), 20)]));
            }
            let hosts = BTreeMap::from([(host, LocalHost { health: HealthStatus::Healthy, addresses: vec![ip(0)] })]);
            work.push((format!("ns/gslb{i}"), plan(&spec).expect("valid"), hosts));
        }
        let run = |decider: &dyn Decider| {
            let start = Instant::now();
            let mut records = 0;
            for (key, plan, hosts) in &work {
                let inputs = ReconcileInputs { gslb_key: key, local_geo_tag: "eu", hosts, peers: &peers, previous: &[] };
                records += render(plan, &StrategyRef::Named(plan.strategy.clone()), inputs, decider).endpoints.len();
            }
            assert!(records >= 2 * work.len());
            start.elapsed().as_secs_f64()
        };
        let native = run(&Native);
        let cpu_before = cpu_seconds();
        let wasm = run(registry.as_ref());
        let wasm_cpu = cpu_seconds() - cpu_before;
        println!("{n:>8} {:>11.1} ms {:>11.1} ms {:>10.2} s {:>7.1}x", native * 1e3, wasm * 1e3, wasm_cpu, wasm / native);
    }
}
