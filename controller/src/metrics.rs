//! Prometheus metrics served on `/metrics`.

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::error::Error;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    pub kind: String,
    pub error: String,
}

/// Every metric the controller exports, registered once.
#[derive(Clone)]
pub struct Metrics {
    pub registry: Arc<Registry>,
    reconciles: Family<KindLabel, Counter>,
    failures: Family<FailureLabels, Counter>,
    duration: Family<KindLabel, Histogram>,
    pub leader: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("berth");
        let reconciles = Family::<KindLabel, Counter>::default();
        let failures = Family::<FailureLabels, Counter>::default();
        let duration = Family::<KindLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.005, 2.0, 12))
        });
        let leader = Gauge::default();
        registry.register("reconciles", "Reconciliations run", reconciles.clone());
        registry.register(
            "reconcile_failures",
            "Reconciliations that failed, by error",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time spent in one reconciliation",
            duration.clone(),
        );
        registry.register(
            "kube_api_requests",
            "Requests sent to the Kubernetes API server, by verb (WATCH: a watch started)",
            crate::api_requests::API_REQUESTS.clone(),
        );
        registry.register(
            "ssh_channels_opened",
            "SSH channels opened on servers, by kind (exec: a command run)",
            berth_remote::CHANNELS_OPENED.clone(),
        );
        registry.register(
            "leader",
            "1 while this replica holds the Lease",
            leader.clone(),
        );
        Self {
            registry: Arc::new(registry),
            reconciles,
            failures,
            duration,
            leader,
        }
    }
}

impl Metrics {
    /// Counts a reconciliation of `kind`; the returned guard records its duration when dropped.
    pub fn reconcile_started(&self, kind: &str) -> ReconcileTimer {
        let label = KindLabel {
            kind: kind.to_string(),
        };
        self.reconciles.get_or_create(&label).inc();
        ReconcileTimer {
            histogram: self.duration.get_or_create(&label).clone(),
            started: Instant::now(),
        }
    }

    pub fn reconcile_failed(&self, kind: &str, error: &Error) {
        self.failures
            .get_or_create(&FailureLabels {
                kind: kind.to_string(),
                error: error.metric_label().to_string(),
            })
            .inc();
    }

    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

/// Records a reconciliation's duration when dropped.
pub struct ReconcileTimer {
    histogram: Histogram,
    started: Instant,
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        self.histogram.observe(self.started.elapsed().as_secs_f64());
    }
}
