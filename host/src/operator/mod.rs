//! The Kubernetes operator: watches Gslbs and what they reference, and writes each Gslb's DNSEndpoint
//! and status. The decisions are `reconcile::render`; this module only gathers inputs and writes.

mod gather;
mod policy;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use crate::api::{DNSEndpoint, Gslb, GslbStatus};
use crate::config::OperatorConfig;
use crate::engine::StrategyRegistry;
use crate::telemetry::{FailureLabels, GslbLabels, Metrics, StatusLabels, StrategyLabels};
use crate::reconcile::{PeerView, ReconcileInputs, StrategyRef, desired_dns_endpoint, plan, render};

/// The field manager of everything Tern writes.
pub const FIELD_MANAGER: &str = "tern";

/// What every reconcile shares.
pub struct Context {
    pub client: Client,
    pub config: OperatorConfig,
    pub registry: Arc<StrategyRegistry>,
    pub metrics: Arc<Metrics>,
    recorder: Recorder,
}

impl Context {
    pub fn new(client: Client, config: OperatorConfig, registry: Arc<StrategyRegistry>, metrics: Arc<Metrics>) -> Self {
        let instance = std::env::var("POD_NAME").ok();
        let recorder = Recorder::new(client.clone(), Reporter { controller: "tern".into(), instance });
        Context { client, config, registry, metrics, recorder }
    }

    /// Tells the user, as a Warning Event on the Gslb, about something they must act on.
    async fn warn(&self, gslb: &Gslb, reason: &str, message: &str) {
        let event = Event {
            type_: EventType::Warning,
            reason: reason.to_string(),
            note: Some(message.chars().take(1000).collect()),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(error) = self.recorder.publish(&event, &gslb.object_ref(&())).await {
            tracing::warn!(%error, reason, "cannot publish an Event");
        }
    }
}

/// Why a reconcile did not finish; it is retried.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Invalid(String),
}

/// Runs the Gslb controller until the process is asked to stop.
pub async fn run(context: Arc<Context>) {
    let client = context.client.clone();
    let gslbs: Api<Gslb> = Api::all(client.clone());
    let controller = Controller::new(gslbs, watcher::Config::default());
    let store = controller.store();
    {
        // Ready once the Gslb API answers a list: CRDs installed, RBAC sufficient, server reachable.
        // (kube's Store::wait_until_ready never resolved here; see the operator issue's notes.)
        let (api, metrics) = (Api::<Gslb>::all(client.clone()), context.metrics.clone());
        tokio::spawn(async move {
            loop {
                match api.list(&kube::api::ListParams::default().limit(1)).await {
                    Ok(_) => return metrics.set_ready(),
                    Err(error) => tracing::warn!(%error, "Gslb API not usable yet; not ready"),
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        });
    }
    let by_service = {
        let store = store.clone();
        move |namespace: Option<String>, service: Option<String>| gslbs_using_service(&store, namespace, service)
    };
    let by_slice = by_service.clone();
    let policy_store = store.clone();
    controller
        .owns(Api::<DNSEndpoint>::all(client.clone()), watcher::Config::default())
        .owns(Api::<Ingress>::all(client.clone()), watcher::Config::default())
        .watches(Api::<EndpointSlice>::all(client.clone()), watcher::Config::default(), move |slice| {
            let service = slice.labels().get("kubernetes.io/service-name").cloned();
            by_slice(slice.namespace(), service)
        })
        .watches(Api::<Service>::all(client.clone()), watcher::Config::default(), move |svc| {
            by_service(svc.namespace(), Some(svc.name_any()))
        })
        .watches(Api::<ConfigMap>::all(client.clone()), watcher::Config::default(), move |cm| {
            gslbs_using_policy(&policy_store, cm.namespace(), cm.name_any())
        })
        .shutdown_on_signal()
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "reconcile did not complete");
            }
        })
        .await;
}

/// The Gslbs whose hosts are backed by `namespace/service` (per their last status).
fn gslbs_using_service(store: &Store<Gslb>, namespace: Option<String>, service: Option<String>) -> Vec<ObjectRef<Gslb>> {
    let (Some(namespace), Some(service)) = (namespace, service) else { return Vec::new() };
    store
        .state()
        .iter()
        .filter(|gslb| {
            let direct = gslb.spec.resource_ref.as_ref().is_some_and(|r| r.kind.as_deref() == Some("Service") && r.name.as_deref() == Some(&service));
            let backing = gslb.status.iter().flat_map(|s| &s.servers).flat_map(|s| &s.services).any(|s| s.namespace == namespace && s.name == service);
            gslb.namespace().as_deref() == Some(namespace.as_str()) && (direct || backing)
        })
        .map(|gslb| ObjectRef::from_obj(gslb.as_ref()))
        .collect()
}

/// The Gslbs whose `policyRef` names ConfigMap `namespace/name`.
fn gslbs_using_policy(store: &Store<Gslb>, namespace: Option<String>, name: String) -> Vec<ObjectRef<Gslb>> {
    store
        .state()
        .iter()
        .filter(|gslb| gslb.namespace() == namespace && gslb.spec.strategy.policy_ref.as_ref().is_some_and(|p| p.name == name))
        .map(|gslb| ObjectRef::from_obj(gslb.as_ref()))
        .collect()
}

fn error_policy(gslb: Arc<Gslb>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    ctx.metrics.errors.get_or_create(&GslbLabels { namespace: gslb.namespace().unwrap_or_default(), name: gslb.name_any() }).inc();
    tracing::warn!(gslb = %gslb.name_any(), namespace = ?gslb.namespace(), %error, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(gslb: Arc<Gslb>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let namespace = gslb.namespace().ok_or_else(|| ReconcileError::Invalid("Gslb without namespace".into()))?;
    let name = gslb.name_any();
    let key = format!("{namespace}/{name}");
    let requeue = Action::requeue(ctx.config.reconcile_requeue);
    let endpoints_api: Api<DNSEndpoint> = Api::namespaced(ctx.client.clone(), &namespace);
    let gslbs: Api<Gslb> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut status = gslb.status.clone().unwrap_or_default();
    status.geo_tag = ctx.config.geo_tag.clone();

    let plan = match plan(&gslb.spec.strategy) {
        Ok(plan) => plan,
        Err(error) => {
            // A bad edit never withdraws what is published: only the status says why.
            if set_condition(&mut status, &gslb, "Ready", false, "InvalidSpec", &error.to_string()) {
                ctx.warn(&gslb, "InvalidSpec", &error.to_string()).await;
            }
            write_status(&gslbs, &name, &gslb, status).await?;
            return Ok(requeue);
        }
    };
    let view = match gather::cluster_view(&ctx, &gslb, &namespace).await {
        Ok(view) => view,
        Err(gather::GatherError::Kube(e)) => return Err(e.into()),
        Err(error) => {
            if set_condition(&mut status, &gslb, "Ready", false, "ResolveFailed", &error.to_string()) {
                ctx.warn(&gslb, "ResolveFailed", &error.to_string()).await;
            }
            write_status(&gslbs, &name, &gslb, status).await?;
            return Ok(requeue);
        }
    };

    let strategy = match &gslb.spec.strategy.policy_ref {
        None => StrategyRef::Named(plan.strategy.clone()),
        Some(reference) => match policy::load(&ctx, &namespace, reference).await {
            Ok(strategy) => strategy,
            Err(policy::PolicyError::Kube(e)) => return Err(e.into()),
            Err(error) => {
                tracing::warn!(gslb = %key, %error, "policy not loaded; keeping the published records");
                set_condition(&mut status, &gslb, "StrategyFailed", true, "PolicyUnavailable", &error.to_string());
                if set_condition(&mut status, &gslb, "Ready", false, "PolicyUnavailable", &error.to_string()) {
                    ctx.warn(&gslb, "PolicyUnavailable", &error.to_string()).await;
                }
                write_status(&gslbs, &name, &gslb, status).await?;
                return Ok(requeue);
            }
        },
    };
    let previous = endpoints_api.get_opt(&name).await?;
    let started = std::time::Instant::now();
    let rendered = {
        let previous_endpoints = previous.as_ref().map(|p| p.spec.endpoints.clone()).unwrap_or_default();
        let (registry, plan, hosts, key, geo_tag) = (ctx.registry.clone(), plan.clone(), view.hosts, key.clone(), ctx.config.geo_tag.clone());
        // Strategy calls are CPU work with a deadline: keep them off the async workers.
        tokio::task::spawn_blocking(move || {
            // Peers' localtargets arrive with the DNS server and peer client.
            let peers = PeerView::default();
            let inputs = ReconcileInputs { gslb_key: &key, local_geo_tag: &geo_tag, hosts: &hosts, peers: &peers, previous: &previous_endpoints };
            render(&plan, &strategy, inputs, registry.as_ref())
        })
        .await
        .map_err(|e| ReconcileError::Invalid(format!("decision task failed: {e}")))?
    };

    let per_host = started.elapsed().as_secs_f64() / rendered.outcomes.len().max(1) as f64;
    let strategy_label = StrategyLabels { strategy: plan.strategy.clone() };
    let mut failures = Vec::new();
    for outcome in &rendered.outcomes {
        ctx.metrics.decision_seconds.get_or_create(&strategy_label).observe(per_host);
        match &outcome.result {
            Ok(d) => {
                ctx.metrics.decisions.get_or_create(&strategy_label).inc();
                let targets: Vec<String> = d.targets.iter().map(|t| t.address.to_string()).collect();
                tracing::info!(gslb = %key, host = %outcome.host, strategy = %plan.strategy, targets = ?targets, ttl = d.ttl_seconds, reason = %d.reason, "decision");
            }
            Err(e) => {
                ctx.metrics.strategy_failures.get_or_create(&FailureLabels { strategy: plan.strategy.clone(), kind: e.kind().to_string() }).inc();
                tracing::warn!(gslb = %key, host = %outcome.host, strategy = %plan.strategy, kind = e.kind(), error = %e, kept = outcome.kept_records, "strategy failed; keeping the published records");
                failures.push(format!("{}: {e}", outcome.host));
            }
        }
    }

    let desired = desired_dns_endpoint(&gslb, rendered.endpoints.clone());
    let unchanged = previous.as_ref().is_some_and(|p| p.spec == desired.spec && p.metadata.labels == desired.metadata.labels);
    if !unchanged {
        endpoints_api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&desired)).await?;
    }

    status.service_health = rendered.service_health;
    status.healthy_records = rendered.healthy_records;
    status.servers = view.servers;
    status.hosts = status.servers.iter().map(|s| s.host.as_str()).collect::<Vec<_>>().join(", ");
    status.load_balancer = Some(crate::api::gslb::LoadBalancerStatus { exposed_ips: view.exposed.iter().map(|ip| ip.to_string()).collect() });
    if failures.is_empty() {
        set_condition(&mut status, &gslb, "StrategyFailed", false, "Decided", "every host was decided");
        set_condition(&mut status, &gslb, "Ready", true, "Reconciled", &format!("{} host(s) decided by {}", rendered.outcomes.len(), plan.strategy));
    } else {
        let message = failures.join("; ");
        if set_condition(&mut status, &gslb, "StrategyFailed", true, "StrategyError", &message) {
            ctx.warn(&gslb, "StrategyError", &message).await;
        }
        set_condition(&mut status, &gslb, "Ready", false, "StrategyError", &message);
    }
    record_status_metrics(&ctx.metrics, &namespace, &name, &status);
    write_status(&gslbs, &name, &gslb, status).await?;
    ctx.metrics.reconciliation_loops.get_or_create(&GslbLabels { namespace, name }).inc();
    Ok(requeue)
}

/// k8gb's per-Gslb gauges: addresses in `healthyRecords`, and hosts per health status.
fn record_status_metrics(metrics: &Metrics, namespace: &str, name: &str, status: &GslbStatus) {
    let gslb = GslbLabels { namespace: namespace.to_string(), name: name.to_string() };
    metrics.healthy_records.get_or_create(&gslb).set(status.healthy_records.values().map(Vec::len).sum::<usize>() as i64);
    for health in ["Healthy", "Unhealthy", "NotFound"] {
        let count = status.service_health.values().filter(|h| format!("{h:?}") == health).count();
        let labels = StatusLabels { namespace: namespace.to_string(), name: name.to_string(), status: health.to_string() };
        metrics.service_status.get_or_create(&labels).set(count as i64);
    }
}

/// Writes the status when it differs from what the object has.
async fn write_status(api: &Api<Gslb>, name: &str, gslb: &Gslb, status: GslbStatus) -> Result<(), ReconcileError> {
    if gslb.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let patch = json!({"apiVersion": Gslb::api_version(&()), "kind": Gslb::kind(&()), "status": status});
    api.patch_status(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&patch)).await?;
    Ok(())
}

/// Sets condition `type_`, keeping its transition time when its status did not change. Returns whether
/// the condition changed (so a user is told once, not every resync).
fn set_condition(status: &mut GslbStatus, gslb: &Gslb, type_: &str, value: bool, reason: &str, message: &str) -> bool {
    let value = if value { "True" } else { "False" }.to_string();
    let generation = gslb.metadata.generation;
    let previous = status.conditions.iter().find(|c| c.type_ == type_).cloned();
    let transition = match &previous {
        Some(c) if c.status == value => c.last_transition_time.clone(),
        _ => Time(k8s_openapi::jiff::Timestamp::now()),
    };
    let condition = Condition {
        type_: type_.to_string(),
        status: value,
        reason: reason.to_string(),
        message: message.chars().take(1024).collect(),
        observed_generation: generation,
        last_transition_time: transition,
    };
    if previous.as_ref().is_some_and(|c| c.status == condition.status && c.reason == condition.reason && c.message == condition.message && c.observed_generation == condition.observed_generation) {
        return false;
    }
    status.conditions.retain(|c| c.type_ != type_);
    status.conditions.push(condition);
    status.conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
    true
}
