//! What can go wrong loading or calling a strategy, as typed errors a caller can act on.

use super::types::RequestError;
use super::validate::ContractViolation;

/// Why a component was not accepted as a strategy. The previous version, if any, keeps serving.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("the module is empty")]
    Empty,
    #[error("the module is {size} bytes, over the {limit}-byte limit")]
    TooLarge { size: usize, limit: usize },
    #[error("not WebAssembly (no \\0asm header)")]
    NotWebAssembly,
    #[error("a core WebAssembly module, not a component: turn it into one with `tern strategy build`")]
    NotAComponent,
    #[error("invalid component: {0}")]
    Invalid(String),
    #[error("the component imports {0:?}; a strategy may import nothing (no WASI, no host functions)")]
    HasImports(Vec<String>),
    #[error("the component does not implement tern:strategy/strategy@0.1.0 (it exports {exports:?}): {detail}")]
    IncompatibleContract { exports: Vec<String>, detail: String },
    #[error("the component failed its smoke call: {0}")]
    SmokeCall(CallError),
    #[error("'{0}' is the name of a built-in strategy and cannot be replaced")]
    ReservedName(String),
    #[error("'{0}' is not a valid strategy name (1-63 characters: letters, digits, '-', '_', '.')")]
    InvalidName(String),
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
}

impl LoadError {
    /// A short, bounded label for metrics and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            LoadError::Empty => "empty",
            LoadError::TooLarge { .. } => "too_large",
            LoadError::NotWebAssembly => "not_wasm",
            LoadError::NotAComponent => "not_component",
            LoadError::Invalid(_) => "invalid",
            LoadError::HasImports(_) => "imports",
            LoadError::IncompatibleContract { .. } => "incompatible",
            LoadError::SmokeCall(_) => "smoke_call",
            LoadError::ReservedName(_) => "reserved_name",
            LoadError::InvalidName(_) => "invalid_name",
            LoadError::Io { .. } => "io",
        }
    }
}

/// An expected failure the strategy itself reported (the WIT `strategy-error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategyFailure {
    #[error("invalid settings: {0}")]
    InvalidSettings(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

/// Why a call into a strategy produced no decision. None of these take the host down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("no strategy named '{0}'")]
    UnknownStrategy(String),
    #[error("invalid request: {0}")]
    InvalidRequest(#[from] RequestError),
    #[error("the strategy ran past its {0} ms deadline and was stopped")]
    Timeout(u64),
    #[error("the strategy tried to use more than {0} bytes of memory")]
    MemoryLimit(usize),
    #[error("the strategy overflowed its stack")]
    StackOverflow,
    #[error("the strategy trapped: {0}")]
    Trap(String),
    #[error("the strategy's output is larger than the {0}-byte limit")]
    OutputTooLarge(usize),
    #[error("the strategy broke the calling convention: {0}")]
    Fault(String),
    #[error("the strategy's decision breaks the contract: {0}")]
    Contract(#[from] ContractViolation),
    #[error("the strategy refused: {0}")]
    Strategy(#[from] StrategyFailure),
}

impl CallError {
    /// A short, bounded label for metrics (`tern_strategy_failures_total{kind}`) and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::UnknownStrategy(_) => "unknown_strategy",
            CallError::InvalidRequest(_) => "invalid_request",
            CallError::Timeout(_) => "timeout",
            CallError::MemoryLimit(_) => "memory_limit",
            CallError::StackOverflow => "stack_overflow",
            CallError::Trap(_) => "trap",
            CallError::OutputTooLarge(_) => "output_too_large",
            CallError::Fault(_) => "fault",
            CallError::Contract(_) => "contract_violation",
            CallError::Strategy(StrategyFailure::InvalidSettings(_)) => "invalid_settings",
            CallError::Strategy(StrategyFailure::InvalidInput(_)) => "invalid_input",
        }
    }
}
