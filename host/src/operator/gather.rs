//! Reads this cluster's side of a Gslb from the API server: hosts, Service health, exposed addresses.
//! Embedded mode also writes the Gslb's own Ingress.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};

use super::{Context, FIELD_MANAGER};
use crate::api::gslb::Server;
use crate::api::Gslb;
use crate::cluster::resolve::{
    EXPOSED_HOSTNAMES, EXPOSED_IP_ADDRESSES, ExposedSource, HOSTNAME, ResolveError, ServiceState, exposed_source, host_health,
    ingress_status, label_selector, server_from_service, servers_from_ingress, service_ready, service_status,
};
use crate::reconcile::LocalHost;
use crate::reconcile::names::zone_of;

/// What this cluster knows of a Gslb's hosts.
pub struct ClusterView {
    pub servers: Vec<Server>,
    pub exposed: Vec<IpAddr>,
    pub hosts: BTreeMap<String, LocalHost>,
}

#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("spec.resourceRef: {0}")]
    Reference(String),
    #[error("annotation {EXPOSED_HOSTNAMES}: resolving hostnames through the edge DNS is not supported yet; use {EXPOSED_IP_ADDRESSES}")]
    HostnamesUnsupported,
    #[error("no host of this Gslb is inside a delegated zone (DNS_ZONES: {0})")]
    NoZone(String),
}

/// Resolves the Gslb's hosts, their health and this cluster's addresses for them.
pub async fn cluster_view(ctx: &Context, gslb: &Gslb, namespace: &str) -> Result<ClusterView, GatherError> {
    let (mut servers, status_ips) = servers_and_status(ctx, gslb, namespace).await?;
    let zones: Vec<&str> = ctx.config.dns_zones.iter().map(|z| z.load_balanced_zone.as_str()).collect();
    if !zones.is_empty() {
        servers.retain(|s| zone_of(&s.host, zones.iter().copied()).is_some());
        if servers.is_empty() {
            return Err(GatherError::NoZone(zones.join(", ")));
        }
    }
    let annotations = gslb.annotations();
    let exposed = match exposed_source(
        annotations.get(EXPOSED_HOSTNAMES).map(String::as_str),
        annotations.get(EXPOSED_IP_ADDRESSES).map(String::as_str),
        &ctx.config.cluster_exposed_ips,
        &status_ips,
    )? {
        ExposedSource::Addresses(ips) => ips,
        ExposedSource::Hostnames(_) => return Err(GatherError::HostnamesUnsupported),
    };
    let policy = gslb.spec.service_health_policy.unwrap_or_default();
    // A Service often backs several hosts: ask the API server about each one once.
    let mut known: BTreeMap<(&str, &str), ServiceState> = BTreeMap::new();
    let mut hosts = BTreeMap::new();
    for server in &servers {
        let mut states = Vec::new();
        for service in &server.services {
            let key = (service.namespace.as_str(), service.name.as_str());
            let state = match known.get(&key) {
                Some(state) => *state,
                None => service_state(ctx, key.0, key.1).await?,
            };
            known.insert(key, state);
            states.push(state);
        }
        let health = host_health(&states, policy);
        hosts.insert(server.host.clone(), LocalHost { health, addresses: exposed.clone() });
    }
    Ok(ClusterView { servers, exposed, hosts })
}

async fn service_state(ctx: &Context, namespace: &str, name: &str) -> Result<ServiceState, kube::Error> {
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), namespace);
    if services.get_opt(name).await?.is_none() {
        return Ok(ServiceState::Missing);
    }
    let slices: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), namespace);
    let list = slices.list(&ListParams::default().labels(&format!("kubernetes.io/service-name={name}"))).await?;
    Ok(ServiceState::Present { ready: service_ready(&list.items) })
}

/// The servers (hosts with Services) and the status addresses of the Gslb's resource.
async fn servers_and_status(ctx: &Context, gslb: &Gslb, namespace: &str) -> Result<(Vec<Server>, Vec<IpAddr>), GatherError> {
    let reference = gslb.spec.resource_ref.clone().filter(|r| !r.is_empty());
    let Some(reference) = reference else {
        let ingress = apply_embedded_ingress(ctx, gslb, namespace).await?;
        return Ok((servers_from_ingress(&ingress), ingress_status(&ingress).0));
    };
    let ref_namespace = reference.namespace.clone().unwrap_or_else(|| namespace.to_string());
    match (reference.api_version.as_deref().unwrap_or("networking.k8s.io/v1"), reference.kind.as_deref()) {
        ("networking.k8s.io/v1", Some("Ingress")) => {
            let api: Api<Ingress> = Api::namespaced(ctx.client.clone(), &ref_namespace);
            let ingress = match &reference.name {
                Some(name) => api.get_opt(name).await?.ok_or_else(|| GatherError::Reference(format!("Ingress {ref_namespace}/{name} not found")))?,
                None => {
                    let selector = label_selector(&reference).map_err(GatherError::Reference)?;
                    let mut found = api.list(&ListParams::default().labels(&selector)).await?.items;
                    if found.len() != 1 {
                        return Err(GatherError::Reference(format!("exactly 1 Ingress expected for {selector}, found {}", found.len())));
                    }
                    found.remove(0)
                }
            };
            Ok((servers_from_ingress(&ingress), ingress_status(&ingress).0))
        }
        ("v1", Some("Service")) => {
            let name = reference.name.clone().ok_or_else(|| GatherError::Reference("a Service is referenced by name".into()))?;
            let api: Api<Service> = Api::namespaced(ctx.client.clone(), &ref_namespace);
            let service = api.get_opt(&name).await?.ok_or_else(|| GatherError::Reference(format!("Service {ref_namespace}/{name} not found")))?;
            let server = server_from_service(&service, gslb.annotations().get(HOSTNAME).map(String::as_str))?;
            Ok((vec![server], service_status(&service).0))
        }
        (api_version, kind) => Err(GatherError::Reference(format!("apiVersion {api_version}, kind {} is not supported", kind.unwrap_or("(none)")))),
    }
}

/// Embedded mode: the Ingress named like the Gslb, from `spec.ingress`, owned by the Gslb.
async fn apply_embedded_ingress(ctx: &Context, gslb: &Gslb, namespace: &str) -> Result<Ingress, GatherError> {
    let spec = gslb.spec.ingress.clone().unwrap_or_default();
    let ingress = Ingress {
        metadata: ObjectMeta {
            name: Some(gslb.name_any()),
            namespace: Some(namespace.to_string()),
            labels: Some([("app.k8gb.io/managed-by".to_string(), "gslb".to_string())].into()),
            owner_references: gslb.controller_owner_ref(&()).map(|o| vec![OwnerReference { block_owner_deletion: Some(true), ..o }]),
            ..ObjectMeta::default()
        },
        spec: Some(IngressSpec { ingress_class_name: spec.ingress_class_name, default_backend: spec.backend, tls: spec.tls, rules: spec.rules }),
        status: None,
    };
    let api: Api<Ingress> = Api::namespaced(ctx.client.clone(), namespace);
    Ok(api.patch(&gslb.name_any(), &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&ingress)).await?)
}

