//! The strategy engine: strategies are WebAssembly components run by wasmtime, each call in a fresh,
//! capped sandbox, each decision checked before anyone sees it.

pub mod builtin;
mod convert;
pub mod error;
pub mod reference;
pub mod registry;
mod sandbox;
pub mod types;
pub mod validate;
pub mod watch;

pub use error::{CallError, LoadError, StrategyFailure};
pub use registry::{RegisteredStrategy, RegistryEvent, StrategyRegistry, StrategySource};
pub use sandbox::{CompiledStrategy, DecisionSession, Digest, EngineLimits, StrategyEngine};
pub use types::{ClusterView, Decision, Health, StrategyRequest, Target};
