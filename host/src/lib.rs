//! Tern: a global server load balancer for Kubernetes, wire-compatible with k8gb.
//!
//! Each cluster publishes its healthy endpoints over DNS, reads its peers' the same way, and a
//! strategy (a sandboxed WebAssembly component) decides which addresses a public name answers with.

pub mod api;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod engine;
pub mod operator;
pub mod reconcile;
pub mod strategy_build;
pub mod telemetry;
