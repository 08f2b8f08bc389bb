//! `ZoneDelegation` (`k8gb.io/v1beta1`, cluster-scoped): a load-balanced zone delegated from a parent
//! zone, and the DNS servers (one per cluster) that serve it.

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "k8gb.io",
    version = "v1beta1",
    kind = "ZoneDelegation",
    shortname = "zd",
    status = "ZoneDelegationStatus",
    printcolumn = r#"{"name":"LoadBalancedZone","type":"string","jsonPath":".spec.loadBalancedZone"}"#,
    printcolumn = r#"{"name":"ParentZone","type":"string","jsonPath":".spec.parentZone"}"#,
    printcolumn = r#"{"name":"NegTTL","type":"integer","jsonPath":".spec.dnsZoneNegTTL"}"#
)]
#[x_kube(validation = Rule::new("self.loadBalancedZone != self.parentZone").message("loadBalancedZone must not equal parentZone"))]
#[x_kube(validation = Rule::new("self.loadBalancedZone.endsWith('.' + self.parentZone)").message("loadBalancedZone must be subdomain"))]
#[serde(rename_all = "camelCase")]
pub struct ZoneDelegationSpec {
    /// The zone Tern's DNS servers answer for, e.g. `cloud.example.com`.
    pub load_balanced_zone: String,
    /// The edge zone it is delegated from, e.g. `example.com`.
    pub parent_zone: String,
    /// The negative-answer TTL of the zone.
    #[serde(rename = "dnsZoneNegTTL")]
    pub dns_zone_neg_ttl: i32,
    /// On deletion, also withdraw the delegation from the edge DNS.
    #[serde(default)]
    pub do_finalize: bool,
}

#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ZoneDelegationStatus {
    /// Every cluster's DNS server for the zone: NS name and address, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dns_servers: Vec<DnsServer>,
}

#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct DnsServer {
    pub name: String,
    pub address: String,
}
