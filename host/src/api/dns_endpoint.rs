//! external-dns' `DNSEndpoint` (`externaldns.k8s.io/v1alpha1`): what Tern writes, what its DNS server
//! and k8gb's CoreDNS `k8s_crd` plugin serve, and what external-dns publishes to the edge.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "externaldns.k8s.io",
    version = "v1alpha1",
    kind = "DNSEndpoint",
    namespaced,
    status = "DNSEndpointStatus",
    // *.k8s.io groups need this approval; it is the one external-dns' own CRD carries.
    annotation("api-approved.kubernetes.io", "https://github.com/kubernetes-sigs/external-dns/pull/2007")
)]
#[serde(rename_all = "camelCase")]
pub struct DNSEndpointSpec {
    #[serde(default)]
    pub endpoints: Vec<Endpoint>,
}

/// One record set.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub dns_name: String,
    #[serde(default)]
    pub targets: Vec<String>,
    pub record_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_identifier: Option<String>,
    #[serde(rename = "recordTTL", default, skip_serializing_if = "Option::is_none")]
    pub record_ttl: Option<i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_specific: Vec<ProviderSpecificProperty>,
}

#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct ProviderSpecificProperty {
    pub name: String,
    pub value: String,
}

#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DNSEndpointStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
