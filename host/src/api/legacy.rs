//! `Gslb` in the legacy group `k8gb.absa.oss/v1beta1`: the same spec minus `serviceHealthPolicy`,
//! still served so existing objects keep working until they are migrated.

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::gslb::{GslbIngressSpec, GslbStatus, ResourceRef, StrategySpec};

/// A legacy Gslb. Label it `k8gb.io/migration-requested=true` to have Tern migrate it to `k8gb.io`.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "k8gb.absa.oss",
    version = "v1beta1",
    kind = "Gslb",
    root = "LegacyGslb",
    namespaced,
    status = "GslbStatus",
    printcolumn = r#"{"name":"strategy","type":"string","jsonPath":".spec.strategy.type"}"#,
    printcolumn = r#"{"name":"geoTag","type":"string","jsonPath":".status.geoTag"}"#,
    printcolumn = r#"{"name":"hosts","type":"string","jsonPath":".status.hosts","priority":1}"#
)]
#[serde(rename_all = "camelCase")]
pub struct LegacyGslbSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<GslbIngressSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<ResourceRef>,
    pub strategy: StrategySpec,
}
