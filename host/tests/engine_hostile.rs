//! Hostile strategies: each is contained with a precise error, and the host keeps answering.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use tern::engine::{CallError, EngineLimits, Health, LoadError, StrategyEngine, StrategyFailure, StrategyRegistry};
use tern::engine::validate::ContractViolation;

fn registry() -> Arc<StrategyRegistry> {
    StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).expect("engine")).expect("built-ins")
}

fn sample() -> tern::engine::StrategyRequest {
    request("eu", Some("eu"), vec![
        cluster("eu", Health::Healthy, &["10.0.0.1", "2001:db8::1"]),
        cluster("us", Health::Healthy, &["10.1.0.1"]),
    ])
}

/// Compiles a core-WAT strategy and calls `decide` on the sample request.
fn decide_wat(registry: &StrategyRegistry, pages: u32, body: &str, extra: &str) -> Result<tern::engine::Decision, CallError> {
    let bytes = component_from_core_wat(&[], "plugin", &strategy_core_wat(pages, body, extra));
    let compiled = registry.compile(&bytes).expect("a well-formed component");
    registry.engine().decide(&compiled, &sample())
}

fn load_error(registry: &StrategyRegistry, bytes: &[u8]) -> LoadError {
    registry.compile(bytes).expect_err("must be rejected")
}

#[test]
fn hostile_components_are_contained() {
    let registry = registry();
    let limits = *registry.engine().limits();

    // 1. An infinite loop is interrupted at the deadline.
    let started = Instant::now();
    let err = decide_wat(&registry, 4, "(loop $forever (br $forever)) (unreachable)", "").unwrap_err();
    assert_eq!(err, CallError::Timeout(100));
    assert!(started.elapsed() < Duration::from_secs(2), "interrupted promptly: {:?}", started.elapsed());

    // 2. Unbounded memory growth stops at the memory cap.
    let grow = "(loop $more (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) (unreachable)";
    assert_eq!(decide_wat(&registry, 4, grow, "").unwrap_err(), CallError::MemoryLimit(limits.max_memory_bytes));

    // 3. Deep recursion overflows the capped stack.
    let recurse = r#"(func $down (param i32) (result i32) (call $down (i32.add (local.get 0) (i32.const 1))))"#;
    assert_eq!(decide_wat(&registry, 4, "(call $down (i32.const 0))", recurse).unwrap_err(), CallError::StackOverflow);

    // 4. A trap.
    let err = decide_wat(&registry, 4, "(unreachable)", "").unwrap_err();
    assert!(matches!(&err, CallError::Trap(m) if m.contains("unreachable")), "{err:?}");

    // 5. A decision naming an address that is not in the request.
    let foreign = ipv4_target(1024, (2048, 2), [203, 0, 113, 66]) + &ok_decision((1024, 1), (0, 0));
    let eu = r#"(data (i32.const 2048) "eu")"#;
    assert_eq!(
        decide_wat(&registry, 4, &foreign, eu).unwrap_err(),
        CallError::Contract(ContractViolation::ForeignAddress { geo_tag: "eu".into(), address: "203.0.113.66".parse().unwrap() })
    );

    // 6. A request address attributed to the wrong cluster is foreign too.
    let misattributed = ipv4_target(1024, (2048, 2), [10, 1, 0, 1]) + &ok_decision((1024, 1), (0, 0));
    assert!(matches!(decide_wat(&registry, 4, &misattributed, eu).unwrap_err(), CallError::Contract(ContractViolation::ForeignAddress { .. })));

    // 7. The same target twice.
    let twice = ipv4_target(1024, (2048, 2), [10, 0, 0, 1]) + &ipv4_target(1060, (2048, 2), [10, 0, 0, 1]) + &ok_decision((1024, 2), (0, 0));
    assert!(matches!(decide_wat(&registry, 4, &twice, eu).unwrap_err(), CallError::Contract(ContractViolation::DuplicateTarget { .. })));

    // 8. A huge decision that fits in guest memory: 200,000 targets exceed the output cap.
    assert_eq!(
        decide_wat(&registry, 256, &ok_decision((131072, 200_000), (0, 0)), "").unwrap_err(),
        CallError::OutputTooLarge(limits.max_output_bytes)
    );

    // 9. Millions of targets, more than guest memory holds: a calling-convention fault.
    let err = decide_wat(&registry, 4, &ok_decision((1024, 3_000_000), (0, 0)), "").unwrap_err();
    assert!(matches!(&err, CallError::Fault(m) if m.contains("out of bounds")), "{err:?}");

    // 10. A giant reason (8 MiB) exceeds the output cap.
    assert_eq!(
        decide_wat(&registry, 160, &ok_decision((0, 0), (131072, 8 << 20)), "").unwrap_err(),
        CallError::OutputTooLarge(limits.max_output_bytes)
    );

    // 11. A long but bounded reason is truncated to one short line, not rejected.
    let decision = decide_wat(&registry, 8, &ok_decision((0, 0), (131072, 100_000)), "").expect("a long reason is fine");
    assert_eq!(decision.reason.len(), limits.decision.max_reason_bytes);
    assert!(decision.targets.is_empty());

    // 12. A reason that is not UTF-8.
    let err = decide_wat(&registry, 4, &ok_decision((0, 0), (2048, 2)), r#"(data (i32.const 2048) "\ff\fe")"#).unwrap_err();
    assert!(matches!(err, CallError::Fault(_)), "{err:?}");

    // 13. A strategy-error is passed through as the strategy's own answer.
    let refuse = [store(16, 1), store(20, 1), store(24, 2048), store(28, 7)].concat() + "(i32.const 16)";
    assert_eq!(
        decide_wat(&registry, 4, &refuse, r#"(data (i32.const 2048) "no way!")"#).unwrap_err(),
        CallError::Strategy(StrategyFailure::InvalidInput("no way!".into()))
    );

    // 14. A component that imports WASI is refused at load.
    let wasi = "package wasi:clocks@0.2.0;\ninterface wall-clock { now: func() -> u64; }\n";
    let evil = "package test:evil;\nworld evil { import wasi:clocks/wall-clock@0.2.0; export tern:strategy/strategy@0.1.0; }\n";
    let importing = strategy_core_wat(4, "(drop (call $now)) (i32.const 16)", "")
        .replace("(memory (export", "(import \"wasi:clocks/wall-clock@0.2.0\" \"now\" (func $now (result i64)))\n  (memory (export");
    let bytes = component_from_core_wat(&[wasi, evil], "evil", &importing);
    assert_eq!(load_error(&registry, &bytes), LoadError::HasImports(vec!["wasi:clocks/wall-clock@0.2.0".into()]));

    // 15. A component of another world.
    let other = "package test:other;\nworld other { export run: func() -> u32; }\n";
    let bytes = component_from_core_wat(&[other], "other", r#"(module (func (export "run") (result i32) (i32.const 1)))"#);
    assert_eq!(load_error(&registry, &bytes).kind(), "incompatible");

    // 16. A component built against another contract version.
    let v2 = std::fs::read_to_string(repo_root().join("wit/strategy.wit")).unwrap().replace("tern:strategy@0.1.0", "tern:strategy@0.2.0");
    let v2_world = v2.replace("world plugin", "world plugin-v2");
    let bytes = component_from_core_wat(&[&v2_world], "plugin-v2", &strategy_core_wat(4, "(i32.const 16)", "").replace("@0.1.0", "@0.2.0"));
    match load_error(&registry, &bytes) {
        LoadError::IncompatibleContract { exports, .. } => assert_eq!(exports, vec!["tern:strategy/strategy@0.2.0".to_string()]),
        other => panic!("expected incompatible contract, got {other:?}"),
    }

    // 17. Bytes that are not WebAssembly, an empty file, a core module, and a corrupt component.
    assert_eq!(load_error(&registry, b"#!/bin/sh\necho pwned\n"), LoadError::NotWebAssembly);
    assert_eq!(load_error(&registry, b""), LoadError::Empty);
    assert_eq!(load_error(&registry, &wat::parse_str("(module)").unwrap()), LoadError::NotAComponent);
    let mut corrupt = chaos_component();
    corrupt.truncate(corrupt.len() / 2);
    assert_eq!(load_error(&registry, &corrupt).kind(), "invalid");
    let oversized = vec![0u8; limits.max_component_bytes + 1];
    assert!(matches!(load_error(&registry, &oversized), LoadError::TooLarge { .. }));

    // After all of that, the built-ins still answer correctly.
    let decision = registry.decide("failover", &sample()).expect("failover answers");
    let ips: Vec<String> = decision.targets.iter().map(|t| t.address.to_string()).collect();
    assert_eq!(ips, ["10.0.0.1", "2001:db8::1"]);
    assert_eq!(decision.reason, "failover: primary eu is healthy");
}

#[test]
fn a_misbehaving_rust_guest_is_contained() {
    let registry = registry();
    let compiled = registry.compile(&chaos_component()).expect("chaos compiles");
    let engine = registry.engine();
    let with_mode = |mode: &str| {
        let mut req = sample();
        req.settings.insert("mode".into(), mode.into());
        engine.decide(&compiled, &req)
    };
    let err = with_mode("panic").unwrap_err();
    assert!(matches!(&err, CallError::Trap(m) if m.contains("unreachable")), "{err:?}");
    assert_eq!(with_mode("spin").unwrap_err(), CallError::Timeout(100));
    assert_eq!(with_mode("hoard").unwrap_err(), CallError::MemoryLimit(engine.limits().max_memory_bytes));
    assert!(matches!(with_mode("invent").unwrap_err(), CallError::Contract(ContractViolation::ForeignAddress { .. })));
    assert_eq!(with_mode("error").unwrap_err().kind(), "invalid_input");
    assert_eq!(with_mode("sideways").unwrap_err().kind(), "invalid_settings");
    // A trapped call leaves nothing behind: the next call on the same component works.
    assert_eq!(with_mode("ok").expect("ok mode").targets.len(), 3);
}

#[test]
fn a_strategy_that_fails_its_smoke_call_is_not_registered() {
    let registry = registry();
    let looping = component_from_core_wat(&[], "plugin", &strategy_core_wat(4, "(loop $l (br $l)) (unreachable)", ""));
    let err = registry.register("looper", &looping, tern::engine::StrategySource::Bytes { origin: "test".into() }).unwrap_err();
    assert_eq!(err, LoadError::SmokeCall(CallError::Timeout(100)));
    assert!(registry.get("looper").is_none());
    let err = registry.register("failover", &chaos_component(), tern::engine::StrategySource::Bytes { origin: "test".into() }).unwrap_err();
    assert_eq!(err, LoadError::ReservedName("failover".into()));
    let err = registry.register("../etc", &chaos_component(), tern::engine::StrategySource::Bytes { origin: "test".into() }).unwrap_err();
    assert_eq!(err.kind(), "invalid_name");
}

#[test]
fn concurrent_calls_are_isolated() {
    let registry = registry();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let registry = registry.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let name = ["roundRobin", "weighted", "failover", "geoip"][i];
                    registry.decide(name, &sample()).expect("built-in answers");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no panic");
    }
}
