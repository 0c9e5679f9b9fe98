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

/// Spec §2.2 "Runtime artifact".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// `active-runtime` (a running container), `docker-image`, `volume` or
    /// `docker-build-cache` (a server's whole build cache).
    pub kind: String,
    pub ownership: String,
    pub server_id: String,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
    pub destination_id: Option<String>,
    /// The container id, the image reference or the Docker volume name.
    pub runtime_id: Option<String>,
    /// Bytes on disk: a container's writable layer, an image with the layers it shares, a
    /// volume's contents, the whole build cache.
    pub bytes: Option<u64>,
    pub inode_count: Option<u64>,
    pub observed_at: String,
    pub evidence: Vec<Evidence>,
    /// `yes` when nothing uses it and no resource declares it, else `no` with the reason.
    pub reclaimable: String,
    pub reclaim_blocked_reason: Option<String>,
    pub warnings: Vec<UsageWarning>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// `label` (a container label), `deployment-snapshot` (the attempt's status),
    /// `read-model` (a resource's spec) or `runtime-identity` (Docker's own report of what it
    /// holds).
    pub source: String,
    pub key: String,
}

/// Spec §2.2 "Usage warning".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UsageWarning {
    /// `partial-diagnostic`, …
    pub code: String,
    pub message: String,
    pub scope: Option<Scope>,
    /// What was not measured: `cpu`, `memory`, `disk`, `inode`, `docker`, `network` or
    /// `ownership`.
    pub resource: Option<String>,
}

/// Spec §2.2 "Runtime usage snapshot".
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct UsageSnapshot {
    pub schema_version: String,
    pub scope: Scope,
    pub generated_at: String,
    /// The newest measurement in the snapshot; absent when there is none.
    pub observed_at: Option<String>,
    /// `live`, `stale` or `unknown`, as for monitoring samples.
    pub freshness: String,
    pub partial: bool,
    /// Sums over every container in scope (and the hosts' figures when the scope includes
    /// hosts).
    pub totals: ResourceMetrics,
    pub by_project: Vec<Usage>,
    pub by_environment: Vec<Usage>,
    pub by_resource: Vec<Usage>,
    pub by_deployment: Vec<Usage>,
    pub artifacts: Vec<Artifact>,
    pub warnings: Vec<UsageWarning>,
    pub source_errors: Vec<SourceError>,
}

/// The usage of one project, environment, resource or deployment.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The group's kind and id, with the ids of what it belongs to.
    pub scope: Scope,
    /// `attributed`: every container counted carries Berth's labels.
    pub ownership: String,
    pub totals: ResourceMetrics,
    /// The deployment of the newest container counted.
    pub current_deployment_id: Option<String>,
    /// The newest container counted.
    pub current_runtime_id: Option<String>,
    pub artifact_count: usize,
    pub warnings: Vec<UsageWarning>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Rollup {
    pub schema_version: String,
    pub scope: Scope,
    pub from: String,
    pub to: String,
    /// `minute`, `five-minute` or `hour`.
    pub bucket: String,
    pub generated_at: String,
    /// `live`: the newest bucket holds a sample of the last two collection intervals; `stale`:
    /// older; `unknown`: no samples in the window.
    pub freshness: String,
    pub partial: bool,
    pub retention: Retention,
    /// One per signal measured in the window, its buckets oldest first.
    pub series: Vec<Series>,
    /// Every figure averaged over the window.
    pub totals: ResourceMetrics,
    /// Resources using the most CPU (then memory), with `includeTopContributors`.
    pub top_contributors: Vec<Contributor>,
    /// Attempts started in the window, with `includeDeploymentMarkers`.
    pub deployment_markers: Vec<DeploymentMarker>,
    /// `missing-samples`: one per gap of a bucket or more in a series.
    pub warnings: Vec<MonitoringWarning>,
    pub source_errors: Vec<SourceError>,
}

/// Spec §4.5 samples list.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SamplesList {
    pub schema_version: String,
    /// The scope filters, as given; `kind`, when not given, is the kind of the most specific
    /// id given (none: the whole organization).
    pub scope: Scope,
    pub from: String,
    pub to: String,
    pub generated_at: String,
    /// `live`: the newest sample is younger than two collection intervals; `stale`: older;
    /// `unknown`: no samples.
    pub freshness: String,
    /// Whether some source could not be read (see `sourceErrors`).
    pub partial: bool,
    pub retention: Retention,
    /// Oldest first; the latest `limit` of the window, each with the totals of `signals` only.
    pub samples: Vec<Sample>,
    /// `missing-samples`: one per gap in a server's or a container's series.
    pub warnings: Vec<MonitoringWarning>,
    pub source_errors: Vec<SourceError>,
}
