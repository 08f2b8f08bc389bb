//! `Gslb` in `k8gb.io/v1beta1`: spec and status exactly as k8gb's, plus Tern's optional strategy
//! settings, policy reference and status conditions.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{IngressBackend, IngressRule, IngressTLS};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelectorRequirement};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A global load-balancing policy for the hosts of an Ingress, Service or route.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "k8gb.io",
    version = "v1beta1",
    kind = "Gslb",
    namespaced,
    status = "GslbStatus",
    printcolumn = r#"{"name":"strategy","type":"string","jsonPath":".spec.strategy.type"}"#,
    printcolumn = r#"{"name":"geoTag","type":"string","jsonPath":".status.geoTag"}"#,
    printcolumn = r#"{"name":"hosts","type":"string","jsonPath":".status.hosts","priority":1}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GslbSpec {
    /// Embedded mode: Tern creates and owns an Ingress of the Gslb's name from this spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<GslbIngressSpec>,
    /// Referenced mode: an existing Ingress, Service or Gateway API route, by name or label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<ResourceRef>,
    /// How the hosts' answers are chosen.
    pub strategy: StrategySpec,
    /// How several Services behind one host combine into its health (default Any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_health_policy: Option<ServiceHealthPolicy>,
}

/// k8gb's copy of `networking.k8s.io/v1` IngressSpec (note `backend`, not `defaultBackend`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GslbIngressSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<IngressBackend>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Vec<IngressTLS>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<IngressRule>>,
}

/// An `ObjectReference` plus an inline label selector, as k8gb's `resourceRef`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

impl ResourceRef {
    /// k8gb treats an empty `resourceRef` as "embedded mode".
    pub fn is_empty(&self) -> bool {
        self == &ResourceRef::default()
    }
}

/// `spec.strategy`: k8gb's fields plus Tern's `settings` and `policyRef`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.weight) || size(self.weight) == 0 || !(self.type in ['failover', 'geoip'])").message("weight is only allowed with a weighting strategy (roundRobin, weighted or a custom one), not failover or geoip"))]
#[x_kube(validation = Rule::new("!has(self.weight) || self.weight.all(tag, self.weight[tag] >= 0 && self.weight[tag] <= 1000)").message("weights must be between 0 and 1000"))]
pub struct StrategySpec {
    /// roundRobin, weighted, failover, geoip, or the name of a custom strategy.
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 63))]
    pub type_: String,
    /// geoTag -> weight (0..1000), for weighted round robin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<BTreeMap<String, i32>>,
    /// The failover primary's geo tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_geo_tag: Option<String>,
    /// TTL of the application records; 0 or unset means 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 86400))]
    pub dns_ttl_seconds: Option<i32>,
    /// Deprecated and unused (kept for compatibility with k8gb).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_brain_threshold_seconds: Option<i32>,
    /// Tern: settings passed to the strategy (validated by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<BTreeMap<String, String>>,
    /// Tern: a ConfigMap key in the Gslb's namespace holding the strategy's `.wasm` component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_ref: Option<PolicyRef>,
}

/// A strategy component stored in a ConfigMap key (`binaryData` or `data`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRef {
    /// The ConfigMap's name, in the Gslb's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key holding the component.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// How several Services behind one host combine into its health.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ServiceHealthPolicy {
    /// Healthy when any Service has a ready endpoint (k8gb's default).
    #[default]
    Any,
    /// Healthy only when every Service has a ready endpoint.
    All,
}

/// A host's health, as k8gb reports it in `status.serviceHealth`.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HealthStatus {
    Healthy,
    Unhealthy,
    NotFound,
}

/// `status`: k8gb's fields plus Tern's conditions.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct GslbStatus {
    #[serde(default)]
    pub service_health: BTreeMap<String, HealthStatus>,
    #[serde(default)]
    pub healthy_records: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub geo_tag: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hosts: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<Server>,
    /// Tern: `Ready`, and `StrategyFailed` when the strategy or policy could not decide.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerStatus {
    /// The cluster's addresses for the Gslb's hosts (k8gb: IPv4 only; Tern: IPv4 and IPv6).
    #[serde(default)]
    pub exposed_ips: Vec<String>,
}

/// A host and the Services behind it.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Server {
    pub host: String,
    #[serde(default)]
    pub services: Vec<NamespacedName>,
}

#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct NamespacedName {
    pub namespace: String,
    pub name: String,
}
