//! Metrics and probes: k8gb's `k8gb_gslb_*` series (same names and labels), Tern's `tern_*` series,
//! and `/metrics`, `/healthz`, `/readyz` over HTTP.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::encoding::{EncodeLabelSet, text::encode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GslbLabels {
    pub namespace: String,
    pub name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    pub namespace: String,
    pub name: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StrategyLabels {
    pub strategy: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    pub strategy: String,
    pub kind: String,
}

fn decision_histogram() -> Histogram {
    // 5 µs .. ~80 ms: decisions are microseconds, the deadline is 100 ms.
    Histogram::new(exponential_buckets(5e-6, 4.0, 8))
}

/// Every series Tern exports. Labels are bounded: Gslb names, statuses, strategy names, error kinds.
pub struct Metrics {
    registry: Registry,
    pub reconciliation_loops: Family<GslbLabels, Counter>,
    pub errors: Family<GslbLabels, Counter>,
    pub healthy_records: Family<GslbLabels, Gauge>,
    pub service_status: Family<StatusLabels, Gauge>,
    pub decisions: Family<StrategyLabels, Counter>,
    pub strategy_failures: Family<FailureLabels, Counter>,
    pub decision_seconds: Family<StrategyLabels, Histogram, fn() -> Histogram>,
    ready: AtomicBool,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::default();
        let reconciliation_loops = Family::<GslbLabels, Counter>::default();
        let errors = Family::<GslbLabels, Counter>::default();
        let healthy_records = Family::<GslbLabels, Gauge>::default();
        let service_status = Family::<StatusLabels, Gauge>::default();
        let decisions = Family::<StrategyLabels, Counter>::default();
        let strategy_failures = Family::<FailureLabels, Counter>::default();
        let decision_seconds = Family::<StrategyLabels, Histogram, fn() -> Histogram>::new_with_constructor(decision_histogram);
        registry.register("k8gb_gslb_reconciliation_loops", "Successful Gslb reconciles", reconciliation_loops.clone());
        registry.register("k8gb_gslb_errors", "Failed Gslb reconciles", errors.clone());
        registry.register("k8gb_gslb_healthy_records", "Addresses in status.healthyRecords", healthy_records.clone());
        registry.register("k8gb_gslb_service_status_num", "Hosts per health status", service_status.clone());
        registry.register("tern_strategy_decisions", "Strategy decisions made", decisions.clone());
        registry.register("tern_strategy_failures", "Strategy calls that produced no decision, by kind", strategy_failures.clone());
        registry.register("tern_strategy_decision_seconds", "Time to decide one host, sandbox included", decision_seconds.clone());
        Arc::new(Metrics {
            registry,
            reconciliation_loops,
            errors,
            healthy_records,
            service_status,
            decisions,
            strategy_failures,
            decision_seconds,
            ready: AtomicBool::new(false),
        })
    }

    /// Marks the process ready (caches synced): `/readyz` answers 200 from now on.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// The OpenMetrics text of every series.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                async move { Ok::<_, Infallible>(respond(&metrics, request.uri().path())) }
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

fn respond(metrics: &Metrics, path: &str) -> Response<Full<Bytes>> {
    let (status, body) = match path {
        "/metrics" => (StatusCode::OK, metrics.render()),
        "/healthz" => (StatusCode::OK, "ok\n".to_string()),
        "/readyz" if metrics.ready.load(Ordering::Acquire) => (StatusCode::OK, "ready\n".to_string()),
        "/readyz" => (StatusCode::SERVICE_UNAVAILABLE, "caches not synced yet\n".to_string()),
        _ => (StatusCode::NOT_FOUND, "not found\n".to_string()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}
