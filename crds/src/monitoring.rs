//! Runtime monitoring samples (spec §2.2 "Monitoring sample", §4.5): what the server observer
//! measures on every tick, without an agent, for the server as a whole and for each managed
//! container, attributed through Berth's labels. The controller records them in the
//! observation store; the shim's `GET /runtime-monitoring/samples` serves them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `schemaVersion` of `GET /runtime-monitoring/samples`.
pub const SAMPLES_SCHEMA_VERSION: &str = "runtime-monitoring.samples.list/v1";
/// `labels.providerKey` of every sample: read from Docker and the kernel over SSH.
pub const PROVIDER_KEY: &str = "docker";

use berth_vocabulary::monitoring as wire;
/// The signals, scopes and metrics of a sample, and its wire form: defined once in
/// `berth-vocabulary`, whose threshold rules name them too.
pub use berth_vocabulary::monitoring::{
    ResourceMetrics, STORED_METRICS, ScopeKind, Signal, StoredMetric, Totals, wire_metric,
};

/// `labels.artifactKind` of a container's sample on the wire (Appaloft's closed set).
pub const ACTIVE_RUNTIME: &str = "active-runtime";

/// One sample as the observation store keeps it: its figures flat ([`Totals`]), its scope a
/// kind. [`MonitoringSample::to_wire`] gives the spec's §2.2 "Monitoring sample".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringSample {
    /// Unique per sample: `<namespace>/<server>:<container id prefix or host>:<observed ms>`.
    pub sample_id: String,
    /// When the server read its counters (RFC 3339, UTC; the server's clock).
    pub observed_at: String,
    /// When the controller received them (RFC 3339, UTC).
    pub collected_at: String,
    pub scope_evidence: ScopeEvidence,
    pub totals: Totals,
    /// `live` when collected by the observer as it ran.
    pub freshness: String,
    /// Whether some totals could not be read (see `sourceErrors`).
    pub partial: bool,
    pub labels: SampleLabels,
    #[serde(default)]
    pub warnings: Vec<SampleWarning>,
    #[serde(default)]
    pub source_errors: Vec<SampleSourceError>,
}

/// Whose the sample is: the server, and for a container its project, environment, resource
/// and deployment (from its labels and the Resource).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ScopeEvidence {
    pub scope: Option<ScopeKind>,
    pub server_id: String,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
}

/// What the sample measured: `host` or `container`, and the container's id.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SampleLabels {
    pub provider_key: String,
    pub artifact_kind: String,
    /// The Docker container id (containers only).
    pub runtime_id: Option<String>,
}

/// `warnings[]` entry, e.g. `missing-samples` for a gap.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SampleWarning {
    pub code: String,
    pub message: String,
    pub signal: Option<String>,
    pub scope: Option<ScopeKind>,
}

/// A part of a sample that could not be read.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SampleSourceError {
    pub source: String,
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

impl MonitoringSample {
    /// Whether it measured a server's host (else one container).
    pub fn is_host(&self) -> bool {
        match self.scope_evidence.scope {
            Some(kind) => kind == ScopeKind::Server,
            None => self.labels.artifact_kind == "host",
        }
    }

    /// Its figures as the spec's `resourceMetrics`.
    pub fn metrics(&self) -> ResourceMetrics {
        ResourceMetrics::of_sample(&self.totals, self.is_host())
    }

    /// The scope it measured: its server, or its container's resource (the server when the
    /// container is attributed to none).
    pub fn scope(&self) -> wire::Scope {
        let evidence = &self.scope_evidence;
        match (&evidence.resource_id, self.is_host()) {
            (Some(resource), false) => wire::Scope::of(ScopeKind::Resource, resource),
            _ => wire::Scope::of(ScopeKind::Server, &evidence.server_id),
        }
    }

    /// The spec's §2.2 "Monitoring sample", with the groups of `signals` only.
    pub fn to_wire(&self, signals: &[Signal]) -> wire::Sample {
        let evidence = &self.scope_evidence;
        let scope = self.scope();
        wire::Sample {
            sample_id: self.sample_id.clone(),
            observed_at: self.observed_at.clone(),
            collected_at: self.collected_at.clone(),
            scope_evidence: wire::ScopeEvidence {
                scope: scope.clone(),
                server_id: Some(evidence.server_id.clone()),
                project_id: evidence.project_id.clone(),
                environment_id: evidence.environment_id.clone(),
                resource_id: evidence.resource_id.clone(),
                deployment_id: evidence.deployment_id.clone(),
            },
            totals: self.metrics().only(signals),
            freshness: self.freshness.clone(),
            partial: self.partial,
            labels: wire::SampleLabels {
                provider_key: Some(self.labels.provider_key.clone()),
                artifact_kind: (!self.is_host()).then(|| ACTIVE_RUNTIME.to_string()),
                runtime_id: self.labels.runtime_id.clone(),
            },
            warnings: self
                .warnings
                .iter()
                .map(|w| wire::MonitoringWarning {
                    code: w.code.clone(),
                    message: w.message.clone(),
                    signal: w.signal.as_deref().and_then(Signal::parse),
                    scope: Some(scope.clone()),
                })
                .collect(),
            source_errors: self
                .source_errors
                .iter()
                .map(SampleSourceError::to_wire)
                .collect(),
        }
    }
}

impl SampleSourceError {
    /// The spec's `sourceErrors` entry (`retriable`).
    pub fn to_wire(&self) -> wire::SourceError {
        wire::SourceError {
            source: self.source.clone(),
            code: self.code.clone(),
            message: self.message.clone(),
            retriable: self.retryable,
        }
    }
}

/// One thing on a server's disk as Docker accounts it (`GET /system/df`): an image, a volume
/// or the build cache. The server observer keeps the latest of each server in the observation
/// store; the usage stream attributes them to deployments and resources.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DiskArtifact {
    /// `image`, `volume` or `build-cache`.
    pub kind: String,
    /// The image id, the volume name, or `build-cache`.
    pub id: String,
    /// An image's tags and digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<String>,
    /// Bytes on disk; for an image, with the layers it shares with others.
    pub bytes: Option<u64>,
    /// Containers using it (any state); for the build cache, its records in use.
    pub in_use_by: Option<u64>,
    /// Files and directories in it: counted for volumes of the local driver only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inode_count: Option<u64>,
    /// Where a local volume's files are on the server (what its inodes are counted in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mountpoint: Option<String>,
}
