//! Runtime monitoring on the wire (spec §2.1 `resourceMetrics`, `scope`; §2.2 "Monitoring
//! sample", "Rollup point", "Rollup series", "Top contributor", "Deployment marker").
//!
//! A sample and its figures ([`Sample`], [`Totals`], [`ResourceMetrics`], [`Signal`]) are
//! shared with the CRDs, so they are defined in `berth-vocabulary` and re-exported here; the
//! rollup answers (retention, series, points, contributors, markers) are the REST API's own.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::monitoring::{
    CpuMetrics, DiskMetrics, DockerMetrics, InodeMetrics, MemoryMetrics, MonitoringWarning,
    NetworkMetrics, RULE_METRICS, ReadMetric, ResourceMetrics, STORED_METRICS, Sample,
    SampleLabels, Scope, ScopeEvidence, ScopeKind, Signal, SourceError, StoredMetric, Totals,
    WireMetric, fields, rule_metrics, wire_metric,
};

/// Spec §2.2 "Monitoring retention info".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    pub raw_retention_hours: u64,
    pub retained_from: String,
    pub retained_to: String,
}

/// Spec §2.2 "Rollup series": one signal's buckets, oldest first.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Series {
    pub signal: Signal,
    pub points: Vec<Point>,
}

/// Spec §2.2 "Rollup point": one bucket; `totals` holds the signal's group, each figure the
/// average of the bucket's samples.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    pub from: String,
    pub to: String,
    pub sample_count: u64,
    pub totals: ResourceMetrics,
}

/// Spec §2.2 "Top contributor": a resource's average use over the window.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Contributor {
    pub scope: Scope,
    pub totals: ResourceMetrics,
    pub sample_count: u64,
}

/// Spec §2.2 "Deployment marker": an attempt created in the window.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentMarker {
    pub deployment_id: String,
    pub resource_id: String,
    pub environment_id: String,
    /// When the attempt was created.
    pub observed_at: String,
    /// The attempt's deployment status.
    pub status: String,
    /// `Deployment <id> <status>`.
    pub label: String,
    /// `time`: the marker is placed by time only.
    pub correlation: String,
}
