//! chaos: a misbehaving strategy for the engine's containment tests (never shipped as a built-in).
//!
//! The `mode` setting picks the misbehaviour: `ok` (answers like roundRobin), `panic`, `invent` (an
//! address not in the request), `spin` (never returns), `hoard` (allocates until memory runs out),
//! `error` (returns `invalid-input`).

use tern_strategy_sdk::{Decision, IpAddress, Request, RequestExt, Settings, Strategy, StrategyError, Target, decision, export_strategy, targets_of};

struct Chaos;

impl Strategy for Chaos {
    fn validate_settings(settings: &Settings) -> Result<(), StrategyError> {
        settings.allow_only(&["mode"])?;
        match settings.get("mode").unwrap_or("ok") {
            "ok" | "panic" | "invent" | "spin" | "hoard" | "error" => Ok(()),
            other => Err(StrategyError::InvalidSettings(format!("setting 'mode': unknown mode '{other}'"))),
        }
    }

    fn decide(req: &Request) -> Result<Decision, StrategyError> {
        match req.settings().get("mode").unwrap_or("ok") {
            "panic" => panic!("chaos strategy asked to panic"),
            "invent" => Ok(decision(
                vec![Target { geo_tag: String::from("eu"), address: IpAddress::Ipv4((203, 0, 113, 66)), weight: None }],
                "chaos: invented",
            )),
            "spin" => {
                let mut n: u64 = req.seed;
                loop {
                    n = core::hint::black_box(n.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            "hoard" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    core::hint::black_box(&hoard);
                }
            }
            "error" => Err(StrategyError::InvalidInput(String::from("chaos: refusing this input"))),
            _ => Ok(decision(targets_of(&req.available()), "chaos: ok")),
        }
    }
}

export_strategy!(Chaos);
