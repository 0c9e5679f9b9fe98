//! ThresholdPolicy: non-enforcing runtime-monitoring thresholds (spec §2.2 "Threshold policy").
//! Crossing a threshold is reported; nothing is stopped or throttled.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;

/// Monitoring thresholds for one scope.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "ThresholdPolicy",
    namespaced,
    shortname = "bthr",
    category = "berth",
    doc = "Non-enforcing runtime-monitoring thresholds for a server or other scope.",
    status = "ThresholdPolicyStatus",
    printcolumn = r#"{"name":"Scope","type":"string","jsonPath":".spec.scope.kind"}"#,
    printcolumn = r#"{"name":"Enabled","type":"boolean","jsonPath":".spec.enabled"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdPolicySpec {
    /// What the thresholds watch.
    pub scope: MonitoringScope,
    /// The thresholds.
    #[serde(default)]
    pub rules: Vec<ThresholdRule>,
    /// Whether the thresholds are evaluated.
    #[serde(default = "crate::common::default_true")]
    pub enabled: bool,
}

/// What a monitoring policy watches (spec §2.1 `scope`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringScope {
    /// Scope kind, e.g. `server`.
    #[schemars(length(min = 1))]
    pub kind: String,
    /// Id of the Server, when the kind is `server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub server_id: Option<String>,
    /// Id of the Project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub project_id: Option<String>,
    /// Id of the Environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub environment_id: Option<String>,
    /// Id of the Resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub resource_id: Option<String>,
    /// Id of the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub deployment_id: Option<String>,
}

/// One threshold on one metric.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdRule {
    /// Id of the rule, unique in the policy.
    #[schemars(length(min = 1))]
    pub rule_id: String,
    /// Signal watched, e.g. `cpu`.
    #[schemars(length(min = 1))]
    pub signal: String,
    /// Metric of the signal, e.g. `containerCpuPercent`.
    #[schemars(length(min = 1))]
    pub metric: String,
    /// Boundary reported as a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<f64>,
    /// Boundary reported as critical.
    pub critical: f64,
    /// How the observed value is compared with a boundary, e.g. `greater-than-or-equal`.
    #[schemars(length(min = 1))]
    pub comparator: String,
}

/// Who last changed a policy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdPolicyStatus {
    /// When the policy last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Time>,
    /// Id of the actor who last changed the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by_actor_id: Option<String>,
    /// Kind of that actor, e.g. `user` or `deploy-token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by_actor_kind: Option<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the policy is evaluated.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
