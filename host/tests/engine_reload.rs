//! The directory source: strategies appear, change, survive bad versions and disappear with their
//! files, including Kubernetes' `..data` symlink swap. Waits on registry events, never on sleeps.

mod common;

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::*;
use tern::engine::builtin::BUILTINS;
use tern::engine::watch::{DirectoryWatcher, WatchOptions};
use tern::engine::{CallError, EngineLimits, Health, LoadError, RegistryEvent, StrategyEngine, StrategyRegistry};

fn wait_for(events: &Receiver<RegistryEvent>, what: &str, want: impl Fn(&RegistryEvent) -> bool) -> RegistryEvent {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match events.recv_timeout(left) {
            Ok(event) if want(&event) => return event,
            Ok(other) => seen.push(other),
            Err(_) => break,
        }
    }
    panic!("timed out waiting for {what}; saw {seen:?}");
}

/// Writes `bytes` to `dir/name` atomically (temp file + rename), as a careful deployer would.
fn put(dir: &Path, name: &str, bytes: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, dir.join(name)).unwrap();
}

fn builtin(name: &str) -> &'static [u8] {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b).unwrap()
}

#[test]
fn directory_strategies_reload_safely() {
    let dir = tempfile::tempdir().unwrap();
    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).unwrap()).unwrap();
    let events = registry.subscribe();
    let options = WatchOptions { debounce: Duration::from_millis(50), rescan_interval: Duration::from_secs(3600) };
    let _watcher = DirectoryWatcher::start(registry.clone(), dir.path(), options).unwrap();
    let req = request("eu", None, vec![cluster("eu", Health::Healthy, &["10.0.0.1"]), cluster("us", Health::Healthy, &["10.1.0.1"])]);

    // Added: usable under the file's name.
    put(dir.path(), "custom.wasm", &chaos_component());
    wait_for(&events, "custom registered", |e| matches!(e, RegistryEvent::Registered { name, .. } if name == "custom"));
    assert_eq!(registry.decide("custom", &req).unwrap().reason, "chaos: ok");
    let first_digest = registry.get("custom").unwrap().compiled.digest();

    // Overwritten with garbage: rejected, and the previous version keeps answering.
    put(dir.path(), "custom.wasm", b"definitely not wasm");
    let event = wait_for(&events, "custom rejected", |e| matches!(e, RegistryEvent::Rejected { name, .. } if name == "custom"));
    assert!(matches!(event, RegistryEvent::Rejected { error: LoadError::NotWebAssembly, .. }), "{event:?}");
    assert_eq!(registry.get("custom").unwrap().compiled.digest(), first_digest);
    assert_eq!(registry.decide("custom", &req).unwrap().reason, "chaos: ok");

    // Fixed: the new version answers.
    put(dir.path(), "custom.wasm", builtin("roundRobin"));
    wait_for(&events, "custom replaced", |e| matches!(e, RegistryEvent::Registered { name, .. } if name == "custom"));
    assert_eq!(registry.decide("custom", &req).unwrap().reason, "roundRobin: healthy clusters: eu, us");

    // A built-in's name cannot be taken; the built-in keeps answering.
    put(dir.path(), "failover.wasm", &chaos_component());
    let event = wait_for(&events, "failover rejected", |e| matches!(e, RegistryEvent::Rejected { name, .. } if name == "failover"));
    assert!(matches!(event, RegistryEvent::Rejected { error: LoadError::ReservedName(_), .. }));
    assert!(registry.decide("failover", &req).unwrap().reason.starts_with("failover:"));

    // Deleted: gone.
    std::fs::remove_file(dir.path().join("custom.wasm")).unwrap();
    wait_for(&events, "custom removed", |e| matches!(e, RegistryEvent::Removed { name } if name == "custom"));
    assert_eq!(registry.decide("custom", &req).unwrap_err(), CallError::UnknownStrategy("custom".into()));
}

#[test]
fn kubernetes_configmap_symlink_swaps_are_seen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // The layout kubelet writes for a ConfigMap volume.
    std::fs::create_dir(root.join("..v1")).unwrap();
    std::fs::write(root.join("..v1/policy.wasm"), chaos_component()).unwrap();
    std::os::unix::fs::symlink("..v1", root.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/policy.wasm", root.join("policy.wasm")).unwrap();

    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).unwrap()).unwrap();
    let events = registry.subscribe();
    let options = WatchOptions { debounce: Duration::from_millis(50), rescan_interval: Duration::from_secs(3600) };
    let _watcher = DirectoryWatcher::start(registry.clone(), root, options).unwrap();
    wait_for(&events, "initial load", |e| matches!(e, RegistryEvent::Registered { name, .. } if name == "policy"));
    let before = registry.get("policy").unwrap().compiled.digest();

    // kubelet's update: a new timestamped dir, a temporary link to it, renamed over `..data`.
    std::fs::create_dir(root.join("..v2")).unwrap();
    std::fs::write(root.join("..v2/policy.wasm"), builtin("geoip")).unwrap();
    std::os::unix::fs::symlink("..v2", root.join("..data_tmp")).unwrap();
    std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
    std::fs::remove_dir_all(root.join("..v1")).unwrap();

    wait_for(&events, "policy swapped", |e| matches!(e, RegistryEvent::Registered { name, .. } if name == "policy"));
    assert_ne!(registry.get("policy").unwrap().compiled.digest(), before);
    let req = request("eu", None, vec![cluster("eu", Health::Healthy, &["10.0.0.1"])]);
    assert!(registry.decide("policy", &req).unwrap().reason.starts_with("geoip:"));
}

#[test]
fn identical_bytes_are_compiled_once() {
    let registry = StrategyRegistry::with_builtins(StrategyEngine::new(EngineLimits::default()).unwrap()).unwrap();
    let a = registry.compile(&chaos_component()).unwrap();
    let b = registry.compile(&chaos_component()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b), "same digest, same compiled component");
}
