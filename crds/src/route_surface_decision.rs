//! RouteSurfaceDecision: a route-surface decision record (spec §2.2 "Route-surface decision
//! record", §4.1): an overlay decision plus the surface kind.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::DecisionContext;
use crate::overlay_decision::default_decision;

/// A decision whether an operation on a route surface is enabled.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "RouteSurfaceDecision",
    namespaced,
    shortname = "brsd",
    category = "berth",
    doc = "A route-surface decision record (spec 4.1).",
    status = "RouteSurfaceDecisionStatus",
    printcolumn = r#"{"name":"Surface","type":"string","jsonPath":".spec.surfaceKind"}"#,
    printcolumn = r#"{"name":"Operation","type":"string","jsonPath":".spec.operationKey"}"#,
    printcolumn = r#"{"name":"Decision","type":"string","jsonPath":".spec.decision"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RouteSurfaceDecisionSpec {
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
    /// Kind of route surface decided on, e.g. `generated-access`.
    #[schemars(length(min = 1))]
    pub surface_kind: String,
    /// Capability the operation belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub capability_key: Option<String>,
    /// Tenant, account, organization, actor, resource references, attributes and details.
    #[serde(flatten)]
    pub context: DecisionContext,
}

/// When the decision was made.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteSurfaceDecisionStatus {
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
