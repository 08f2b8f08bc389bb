//! The Kubernetes API Tern speaks: k8gb's `Gslb` (canonical and legacy groups) and `ZoneDelegation`,
//! and external-dns' `DNSEndpoint`. Field names and types are k8gb's wire contract; Tern only adds
//! optional fields.

pub mod crd;
pub mod dns_endpoint;
pub mod gslb;
pub mod legacy;
pub mod zone_delegation;

pub use dns_endpoint::{DNSEndpoint, DNSEndpointSpec, Endpoint};
pub use gslb::{Gslb, GslbSpec, GslbStatus, HealthStatus, ServiceHealthPolicy, StrategySpec};
pub use legacy::LegacyGslb;
pub use zone_delegation::{ZoneDelegation, ZoneDelegationSpec};
