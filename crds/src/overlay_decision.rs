//! OverlayDecision: a deployment-overlay decision record (spec §2.2 "Deployment-overlay decision
//! record", §4.1), and the spec and status every decision kind shares (RouteSurfaceDecision's
//! spec adds the surface kind).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::DecisionContext;

/// What the spec of every decision kind holds. Flattened into each, so its fields sit directly
/// under `spec` as in the REST records.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionSpec {
    /// Operation decided on.
    #[schemars(length(min = 1))]
    pub operation_key: String,
    /// The decision, e.g. `enabled`.
    #[serde(default = "default_decision")]
    #[schemars(length(min = 1))]
    pub decision: String,
    /// Why the decision was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What asked for the decision, e.g. `cli`.
    #[schemars(length(min = 1))]
    pub source: String,
    /// Capability the operation belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub capability_key: Option<String>,
    /// Tenant, account, organization, actor, resource references, attributes and details.
    #[serde(flatten)]
    pub context: DecisionContext,
}

fn default_decision() -> String {
    "enabled".to_string()
}

/// A decision whether a deployment overlay operation is enabled.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "OverlayDecision",
    namespaced,
    shortname = "bovl",
    category = "berth",
    doc = "A deployment-overlay decision record (spec 4.1).",
    status = "DecisionStatus",
    printcolumn = r#"{"name":"Operation","type":"string","jsonPath":".spec.operationKey"}"#,
    printcolumn = r#"{"name":"Decision","type":"string","jsonPath":".spec.decision"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct OverlayDecisionSpec {
    /// All of it: a deployment-overlay decision adds nothing to the shared spec.
    #[serde(flatten)]
    pub decision: DecisionSpec,
}

/// When the decision was made.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionStatus {
    /// When the decision was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<Time>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the decision is recorded.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
