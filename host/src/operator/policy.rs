//! Strategies from ConfigMaps: `spec.strategy.policyRef` names a key holding a `.wasm` component,
//! compiled once per content digest through the engine's registry.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

use super::Context;
use crate::api::gslb::PolicyRef;
use crate::engine::LoadError;
use crate::reconcile::StrategyRef;

/// Why a policy could not be loaded; the Gslb keeps its records and says why.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("spec.strategy.policyRef: ConfigMap {0} not found")]
    MissingConfigMap(String),
    #[error("spec.strategy.policyRef: ConfigMap {configmap} has no key '{key}'")]
    MissingKey { configmap: String, key: String },
    #[error("spec.strategy.policyRef: {origin}: {error}")]
    Load { origin: String, error: LoadError },
}

/// The compiled strategy `reference` points at, in `namespace`.
pub async fn load(ctx: &Context, namespace: &str, reference: &PolicyRef) -> Result<StrategyRef, PolicyError> {
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), namespace);
    let configmap = format!("{namespace}/{}", reference.name);
    let cm = configmaps.get_opt(&reference.name).await?.ok_or_else(|| PolicyError::MissingConfigMap(configmap.clone()))?;
    let bytes = cm
        .binary_data
        .as_ref()
        .and_then(|d| d.get(&reference.key))
        .map(|b| b.0.clone())
        .or_else(|| cm.data.as_ref().and_then(|d| d.get(&reference.key)).map(|s| s.clone().into_bytes()))
        .ok_or_else(|| PolicyError::MissingKey { configmap: configmap.clone(), key: reference.key.clone() })?;
    let origin = format!("configmap {configmap} key {}", reference.key);
    let registry = ctx.registry.clone();
    // Compiling is CPU work (cached per digest): keep it off the async workers.
    let compiled = tokio::task::spawn_blocking(move || registry.compile(&bytes))
        .await
        .map_err(|e| PolicyError::Load { origin: origin.clone(), error: LoadError::Invalid(format!("compile task failed: {e}")) })?
        .map_err(|error| PolicyError::Load { origin: origin.clone(), error })?;
    Ok(StrategyRef::Compiled { origin, strategy: compiled })
}
