//! The strategy registry: names to compiled strategies, swapped atomically, compiled once per digest.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;

use super::builtin::{BUILTINS, is_builtin};
use super::error::{CallError, LoadError};
use super::sandbox::{CompiledStrategy, Digest, StrategyEngine};
use super::types::{ClusterView, Decision, Health, StrategyRequest};

/// Where a registered strategy came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrategySource {
    /// Embedded in the binary.
    BuiltIn,
    /// A `.wasm` file in a watched directory.
    File(PathBuf),
    /// Bytes handed over by the caller, e.g. a ConfigMap key (`origin` names it).
    Bytes { origin: String },
}

impl std::fmt::Display for StrategySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StrategySource::BuiltIn => write!(f, "built-in"),
            StrategySource::File(path) => write!(f, "file {}", path.display()),
            StrategySource::Bytes { origin } => write!(f, "{origin}"),
        }
    }
}

/// A name bound to a compiled strategy.
#[derive(Debug)]
pub struct RegisteredStrategy {
    pub name: String,
    pub source: StrategySource,
    pub compiled: Arc<CompiledStrategy>,
}

/// What happened in the registry, for watchers, logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryEvent {
    Registered { name: String, digest: Digest, source: StrategySource },
    Rejected { name: String, source: StrategySource, error: LoadError },
    Removed { name: String },
}

/// Names to strategies. Readers never block: a lookup holds one consistent version, and a call in
/// flight finishes on the version it started with.
pub struct StrategyRegistry {
    engine: Arc<StrategyEngine>,
    entries: ArcSwap<BTreeMap<String, Arc<RegisteredStrategy>>>,
    /// Compiled components by digest, so the same bytes are compiled once however often they appear.
    compiled: Mutex<HashMap<Digest, Weak<CompiledStrategy>>>,
    /// Serialises writers (registration, removal) so no update is lost.
    write_lock: Mutex<()>,
    subscribers: Mutex<Vec<Sender<RegistryEvent>>>,
}

impl StrategyRegistry {
    /// A registry holding the built-in strategies.
    pub fn with_builtins(engine: Arc<StrategyEngine>) -> Result<Arc<Self>, LoadError> {
        let registry = Arc::new(StrategyRegistry {
            engine,
            entries: ArcSwap::from_pointee(BTreeMap::new()),
            compiled: Mutex::new(HashMap::new()),
            write_lock: Mutex::new(()),
            subscribers: Mutex::new(Vec::new()),
        });
        for (name, bytes) in BUILTINS {
            let compiled = registry.compile(bytes)?;
            registry.insert(RegisteredStrategy { name: name.to_string(), source: StrategySource::BuiltIn, compiled });
        }
        Ok(registry)
    }

    pub fn engine(&self) -> &Arc<StrategyEngine> {
        &self.engine
    }

    /// The strategy registered as `name`.
    pub fn get(&self, name: &str) -> Option<Arc<RegisteredStrategy>> {
        self.entries.load().get(name).cloned()
    }

    /// Every registered strategy, by name.
    pub fn list(&self) -> Vec<Arc<RegisteredStrategy>> {
        self.entries.load().values().cloned().collect()
    }

    /// Decides `request` with the strategy registered as `name`.
    pub fn decide(&self, name: &str, request: &StrategyRequest) -> Result<Decision, CallError> {
        let strategy = self.get(name).ok_or_else(|| CallError::UnknownStrategy(name.to_string()))?;
        self.engine.decide(&strategy.compiled, request)
    }

    /// Compiles `bytes` (or reuses the compilation of identical bytes) and checks it is a strategy.
    /// Use this for policies that are not registered by name, e.g. a Gslb's ConfigMap reference.
    pub fn compile(&self, bytes: &[u8]) -> Result<Arc<CompiledStrategy>, LoadError> {
        let digest = Digest::of(bytes);
        let mut cache = self.compiled.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(compiled) = cache.get(&digest).and_then(Weak::upgrade) {
            return Ok(compiled);
        }
        let compiled = Arc::new(self.engine.compile(bytes)?);
        cache.retain(|_, weak| weak.strong_count() > 0);
        cache.insert(digest, Arc::downgrade(&compiled));
        Ok(compiled)
    }

    /// Compiles `bytes`, smoke-calls it, and only then binds it to `name`, replacing any previous
    /// version atomically. On any error the previous version keeps serving and subscribers hear why.
    pub fn register(
        &self,
        name: &str,
        bytes: &[u8],
        source: StrategySource,
    ) -> Result<Arc<RegisteredStrategy>, LoadError> {
        let result = self.prepare(name, bytes);
        match result {
            Ok(compiled) => {
                let registered = self.insert(RegisteredStrategy { name: name.to_string(), source: source.clone(), compiled });
                self.publish(RegistryEvent::Registered { name: name.to_string(), digest: registered.compiled.digest(), source });
                Ok(registered)
            }
            Err(error) => {
                self.publish(RegistryEvent::Rejected { name: name.to_string(), source, error: error.clone() });
                Err(error)
            }
        }
    }

    fn prepare(&self, name: &str, bytes: &[u8]) -> Result<Arc<CompiledStrategy>, LoadError> {
        check_name(name)?;
        if is_builtin(name) {
            return Err(LoadError::ReservedName(name.to_string()));
        }
        let compiled = self.compile(bytes)?;
        smoke_call(&self.engine, &compiled).map_err(LoadError::SmokeCall)?;
        Ok(compiled)
    }

    /// Reports that `name` could not even be read from `source`.
    pub(crate) fn reject(&self, name: &str, source: StrategySource, error: LoadError) {
        self.publish(RegistryEvent::Rejected { name: name.to_string(), source, error });
    }

    /// Removes the strategy registered as `name`, unless it is built in. Returns whether it was there.
    pub fn remove(&self, name: &str) -> bool {
        if is_builtin(name) {
            return false;
        }
        let _writer = self.write_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut next = BTreeMap::clone(&self.entries.load());
        let removed = next.remove(name).is_some();
        if removed {
            self.entries.store(Arc::new(next));
            self.publish(RegistryEvent::Removed { name: name.to_string() });
        }
        removed
    }

    /// Events from now on: registrations, rejections and removals.
    pub fn subscribe(&self) -> Receiver<RegistryEvent> {
        let (tx, rx) = channel();
        self.subscribers.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(tx);
        rx
    }

    fn insert(&self, strategy: RegisteredStrategy) -> Arc<RegisteredStrategy> {
        let strategy = Arc::new(strategy);
        let _writer = self.write_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut next = BTreeMap::clone(&self.entries.load());
        next.insert(strategy.name.clone(), strategy.clone());
        self.entries.store(Arc::new(next));
        strategy
    }

    fn publish(&self, event: RegistryEvent) {
        match &event {
            RegistryEvent::Registered { name, digest, source } => {
                tracing::info!(strategy = %name, digest = %digest.short(), %source, "strategy registered")
            }
            RegistryEvent::Rejected { name, source, error } => {
                tracing::warn!(strategy = %name, %source, kind = error.kind(), %error, "strategy rejected; the previous version, if any, keeps serving")
            }
            RegistryEvent::Removed { name } => tracing::info!(strategy = %name, "strategy removed"),
        }
        let mut subscribers = self.subscribers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        subscribers.retain(|tx| tx.send(event.clone()).is_ok());
    }
}

/// Strategy names: 1-63 characters of letters, digits, '-', '_' and '.', not starting with '.'.
fn check_name(name: &str) -> Result<(), LoadError> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid { Ok(()) } else { Err(LoadError::InvalidName(name.to_string())) }
}

/// Exercises a new strategy before it may serve: both exports must return without trapping and the
/// decision must pass validation. A `strategy-error` is an answer, not a failure (the sample request
/// may lack settings the strategy needs).
fn smoke_call(engine: &StrategyEngine, compiled: &CompiledStrategy) -> Result<(), CallError> {
    let pass = |result: Result<(), CallError>| match result {
        Ok(()) | Err(CallError::Strategy(_)) => Ok(()),
        Err(other) => Err(other),
    };
    pass(engine.validate_settings(compiled, &[]))?;
    pass(engine.decide(compiled, &sample_request()).map(|_| ()))
}

/// A small, realistic request: three clusters, one down, IPv4 and IPv6.
pub fn sample_request() -> StrategyRequest {
    let ips = |list: &[&str]| list.iter().filter_map(|s| s.parse::<IpAddr>().ok()).collect::<Vec<_>>();
    StrategyRequest {
        host: "smoke.tern.invalid".to_string(),
        local_geo_tag: "eu".to_string(),
        primary_geo_tag: Some("eu".to_string()),
        weights: [("eu".to_string(), 50), ("us".to_string(), 50)].into_iter().collect(),
        settings: BTreeMap::new(),
        clusters: vec![
            ClusterView { geo_tag: "eu".to_string(), health: Health::Healthy, addresses: ips(&["192.0.2.1", "2001:db8::1"]) },
            ClusterView { geo_tag: "us".to_string(), health: Health::Healthy, addresses: ips(&["198.51.100.1"]) },
            ClusterView { geo_tag: "ap".to_string(), health: Health::Unhealthy, addresses: vec![] },
        ],
        default_ttl_seconds: 30,
        seed: 1,
    }
}
