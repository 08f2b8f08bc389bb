//! The built-in strategies, embedded as the committed, reproducible builds in `strategies/dist/`.

/// (name, component bytes) of every built-in strategy.
pub const BUILTINS: [(&str, &[u8]); 4] = [
    ("roundRobin", include_bytes!("../../../strategies/dist/roundRobin.wasm")),
    ("weighted", include_bytes!("../../../strategies/dist/weighted.wasm")),
    ("failover", include_bytes!("../../../strategies/dist/failover.wasm")),
    ("geoip", include_bytes!("../../../strategies/dist/geoip.wasm")),
];

/// Whether `name` is a built-in strategy's.
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.iter().any(|(builtin, _)| *builtin == name)
}
