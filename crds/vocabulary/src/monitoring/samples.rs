//! Spec §2.2 "Monitoring sample" and the warnings and source errors of monitoring answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ResourceMetrics, Scope, Signal};

/// Whose a sample is (spec §2.2 "Monitoring sample" `scopeEvidence`): the scope it measured
/// (a server's host, or a resource's container) and every id its attribution names.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ScopeEvidence {
    pub scope: Scope,
    pub server_id: Option<String>,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
}

/// `labels` of a sample: what measured it and, for a container, its kind and id.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct SampleLabels {
    /// `docker`.
    pub provider_key: Option<String>,
    /// `active-runtime` for a running container; a host sample has none.
    pub artifact_kind: Option<String>,
    /// The container's id.
    pub runtime_id: Option<String>,
}

/// A `warnings[]` entry of a monitoring answer, e.g. `missing-samples` for a gap.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringWarning {
    /// `missing-samples`, `partial-window`, `stale-samples`, `missing-metric-source` or
    /// `outside-retention`.
    pub code: String,
    pub message: String,
    pub signal: Option<Signal>,
    /// The series it is about.
    pub scope: Option<Scope>,
}

/// A part of a monitoring answer that could not be read (spec §2.1 `sourceErrors`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceError {
    /// `monitoring-store`, `collector`, `read-model` or `unknown` (monitoring);
    /// `runtime-target`, `docker`, `read-model`, … (usage).
    pub source: String,
    pub code: String,
    pub message: String,
    pub retriable: bool,
}

/// Spec §2.2 "Monitoring sample".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub sample_id: String,
    /// When the server read its counters.
    pub observed_at: String,
    /// When the controller received them.
    pub collected_at: String,
    pub scope_evidence: ScopeEvidence,
    pub totals: ResourceMetrics,
    /// `live`, `recent-sample`, `stale` or `unknown`.
    pub freshness: String,
    pub partial: bool,
    pub labels: SampleLabels,
    pub warnings: Vec<MonitoringWarning>,
    pub source_errors: Vec<SourceError>,
}
