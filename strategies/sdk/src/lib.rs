//! Write a Tern traffic-steering strategy as one Rust function.
//!
//! A strategy implements [`Strategy`] and exports it with [`export_strategy!`]; the crate is built for
//! `wasm32-unknown-unknown` and turned into a component with `tern strategy build`. The types are the
//! ones of the WIT contract `tern:strategy@0.1.0` (`wit/strategy.wit`), plus helpers for what most
//! strategies need: the healthy clusters, settings parsing with clear errors, and a seeded shuffle.

#![no_std]

extern crate alloc;
// The generated bindings name this crate by its path, from inside it too.
extern crate self as tern_strategy_sdk;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_bindings",
        default_bindings_module: "::tern_strategy_sdk::__private",
        runtime_path: "::tern_strategy_sdk::__private::wit_bindgen::rt",
    });
}

#[doc(hidden)]
pub mod __private {
    pub use crate::bindings::*;
    pub use alloc::string::String;
    pub use alloc::vec::Vec;
    pub use wit_bindgen;
}

pub use bindings::exports::tern::strategy::strategy::{
    Cluster, Decision, Health, IpAddress, Request, StrategyError, Target,
};

/// A traffic-steering strategy: `decide` is the one function most strategies write.
pub trait Strategy {
    /// Checks a Gslb's settings; the default accepts none at all, so a typo is an error.
    fn validate_settings(settings: &Settings) -> Result<(), StrategyError> {
        settings.allow_only(&[])
    }

    /// Picks the targets the host's public name answers with.
    fn decide(req: &Request) -> Result<Decision, StrategyError>;
}

/// Exports a [`Strategy`] implementation as the component's `tern:strategy/strategy` interface.
#[macro_export]
macro_rules! export_strategy {
    ($strategy:ty) => {
        const _: () = {
            struct Exported;
            impl $crate::__private::exports::tern::strategy::strategy::Guest for Exported {
                fn validate_settings(
                    settings: $crate::__private::Vec<(
                        $crate::__private::String,
                        $crate::__private::String,
                    )>,
                ) -> Result<(), $crate::StrategyError> {
                    <$strategy as $crate::Strategy>::validate_settings(&$crate::Settings::new(&settings))
                }
                fn decide(req: $crate::Request) -> Result<$crate::Decision, $crate::StrategyError> {
                    // Settings are checked here too: a decision never runs on settings it rejects.
                    <$strategy as $crate::Strategy>::validate_settings(&$crate::Settings::new(&req.settings))?;
                    <$strategy as $crate::Strategy>::decide(&req)
                }
            }
            $crate::__private::__export_bindings!(Exported);
        };
    };
}

/// A Gslb's `spec.strategy.settings`, with parsing that names the setting in every error.
#[derive(Clone, Copy)]
pub struct Settings<'a> {
    pairs: &'a [(String, String)],
}

impl<'a> Settings<'a> {
    pub fn new(pairs: &'a [(String, String)]) -> Self {
        Settings { pairs }
    }

    /// The raw value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or an `invalid-settings` error saying it is required.
    pub fn require(&self, key: &str) -> Result<&'a str, StrategyError> {
        self.get(key)
            .ok_or_else(|| StrategyError::InvalidSettings(format!("setting '{key}' is required")))
    }

    /// The value of `key` parsed as `T`, or an error naming the setting and the bad value.
    pub fn parse<T: core::str::FromStr>(&self, key: &str) -> Result<Option<T>, StrategyError> {
        match self.get(key) {
            None => Ok(None),
            Some(raw) => raw.trim().parse().map(Some).map_err(|_| {
                StrategyError::InvalidSettings(format!(
                    "setting '{key}': cannot parse '{raw}' as {}",
                    core::any::type_name::<T>()
                ))
            }),
        }
    }

    /// The comma-separated items of `key`, trimmed, empty items dropped.
    pub fn list(&self, key: &str) -> Vec<&'a str> {
        self.get(key)
            .map(|raw| raw.split(',').map(str::trim).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default()
    }

    /// An error for the first key not in `allowed`.
    pub fn allow_only(&self, allowed: &[&str]) -> Result<(), StrategyError> {
        match self.pairs.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            None => Ok(()),
            Some((k, _)) if allowed.is_empty() => Err(StrategyError::InvalidSettings(format!(
                "unknown setting '{k}': this strategy takes no settings"
            ))),
            Some((k, _)) => Err(StrategyError::InvalidSettings(format!(
                "unknown setting '{k}': expected one of {}",
                allowed.join(", ")
            ))),
        }
    }
}

/// Questions most strategies ask of a request.
pub trait RequestExt {
    /// The clusters that can serve: healthy and with at least one address, in request order.
    fn available(&self) -> Vec<&Cluster>;
    /// The cluster with this geo tag.
    fn cluster(&self, geo_tag: &str) -> Option<&Cluster>;
    /// The weight the Gslb gives this geo tag, if any.
    fn weight(&self, geo_tag: &str) -> Option<u32>;
    /// The request's settings.
    fn settings(&self) -> Settings<'_>;
}

impl RequestExt for Request {
    fn available(&self) -> Vec<&Cluster> {
        self.clusters.iter().filter(|c| c.is_available()).collect()
    }

    fn cluster(&self, geo_tag: &str) -> Option<&Cluster> {
        self.clusters.iter().find(|c| c.geo_tag == geo_tag)
    }

    fn weight(&self, geo_tag: &str) -> Option<u32> {
        self.weights.iter().find(|(tag, _)| tag == geo_tag).map(|(_, w)| *w)
    }

    fn settings(&self) -> Settings<'_> {
        Settings::new(&self.settings)
    }
}

/// Questions about one cluster.
pub trait ClusterExt {
    /// Healthy and with at least one address.
    fn is_available(&self) -> bool;
    /// The cluster's addresses as targets, each with `weight`.
    fn targets(&self, weight: Option<u32>) -> Vec<Target>;
}

impl ClusterExt for Cluster {
    fn is_available(&self) -> bool {
        self.health == Health::Healthy && !self.addresses.is_empty()
    }

    fn targets(&self, weight: Option<u32>) -> Vec<Target> {
        self.addresses
            .iter()
            .map(|address| Target { geo_tag: self.geo_tag.clone(), address: *address, weight })
            .collect()
    }
}

/// The targets of every cluster in `clusters`, unweighted, in order.
pub fn targets_of(clusters: &[&Cluster]) -> Vec<Target> {
    clusters.iter().flat_map(|c| c.targets(None)).collect()
}

/// A decision with the request's default TTL.
pub fn decision(targets: Vec<Target>, reason: impl Into<String>) -> Decision {
    Decision { targets, ttl_seconds: None, reason: reason.into() }
}

/// The geo tags of `clusters` joined with ", " (for reasons), or "none".
pub fn geo_tags(clusters: &[&Cluster]) -> String {
    if clusters.is_empty() {
        return "none".to_string();
    }
    let tags: Vec<&str> = clusters.iter().map(|c| c.geo_tag.as_str()).collect();
    tags.join(", ")
}

/// A small deterministic random number generator (SplitMix64) seeded from `request.seed`.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0), without modulo bias worth caring about for DNS.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// The index of an item picked with probability proportional to its weight; `None` when every
    /// weight is 0.
    pub fn weighted_pick(&mut self, weights: &[u32]) -> Option<usize> {
        let total: u64 = weights.iter().map(|w| *w as u64).sum();
        if total == 0 {
            return None;
        }
        let mut ticket = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if ticket < *w as u64 {
                return Some(i);
            }
            ticket -= *w as u64;
        }
        None
    }
}
