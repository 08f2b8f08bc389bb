//! Strategy engine benchmark: each built-in on a 3-cluster x 4-address request, natively and as
//! WebAssembly (fresh store per call, and one reused instance), as ratios to the native time measured
//! in the same run; plus the engine's resident memory with the built-ins loaded.
//!
//! Run: `cargo bench -p tern --bench strategies`

use std::hint::black_box;
use std::time::Instant;

use tern::engine::reference;
use tern::engine::validate::{DecisionLimits, validate_decision};
use tern::engine::{ClusterView, EngineLimits, Health, StrategyEngine, StrategyRegistry, StrategyRequest};

fn request() -> StrategyRequest {
    let cluster = |tag: &str, base: u8, health| ClusterView {
        geo_tag: tag.to_string(),
        health,
        addresses: (1..=4).map(|i| std::net::IpAddr::from([10, base, 0, i])).collect(),
    };
    StrategyRequest {
        host: "app.cloud.example.com".into(),
        local_geo_tag: "eu".into(),
        primary_geo_tag: Some("eu".into()),
        weights: [("eu".to_string(), 60), ("us".to_string(), 30), ("ap".to_string(), 10)].into_iter().collect(),
        settings: Default::default(),
        clusters: vec![cluster("eu", 0, Health::Healthy), cluster("us", 1, Health::Healthy), cluster("ap", 2, Health::Unhealthy)],
        default_ttl_seconds: 30,
        seed: 42,
    }
}

/// Nanoseconds per call of `f`, the best of five rounds of `iterations` calls.
fn time(iterations: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..iterations / 10 {
        f();
    }
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iterations {
                f();
            }
            start.elapsed().as_nanos() as f64 / iterations as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

fn main() {
    let rss_before = rss_kib();
    let started = Instant::now();
    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).expect("engine")).expect("built-ins");
    let load_time = started.elapsed();
    let rss_loaded = rss_kib();
    let req = request();
    let limits = DecisionLimits::default();

    println!("strategy engine benchmark: 3 clusters x 4 addresses, best of 5 rounds");
    println!("{:<11} {:>10} {:>13} {:>7} {:>13} {:>7}", "strategy", "native", "wasm fresh", "ratio", "wasm reused", "ratio");
    for name in reference::BUILTIN_NAMES {
        let native = time(200_000, || {
            let normalized = black_box(&req).clone().normalized().expect("valid");
            let raw = reference::decide(name, &normalized).expect("built-in").expect("decides");
            black_box(validate_decision(&normalized, raw, &limits).expect("valid"));
        });
        let fresh = time(20_000, || {
            black_box(registry.decide(name, black_box(&req)).expect("decides"));
        });
        let strategy = registry.get(name).expect("registered");
        let mut session = registry.engine().session(&strategy.compiled).expect("instance");
        let reused = time(100_000, || {
            black_box(session.decide(black_box(&req)).expect("decides"));
        });
        println!(
            "{name:<11} {:>7.2} µs {:>10.2} µs {:>6.1}x {:>10.2} µs {:>6.1}x",
            native / 1e3,
            fresh / 1e3,
            fresh / native,
            reused / 1e3,
            reused / native
        );
    }
    println!(
        "engine + 4 built-ins: loaded in {:.0} ms, resident memory {:.1} MiB (process {:.1} MiB)",
        load_time.as_secs_f64() * 1e3,
        rss_loaded.saturating_sub(rss_before) as f64 / 1024.0,
        rss_loaded as f64 / 1024.0
    );
}
