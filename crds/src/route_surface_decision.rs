//! RouteSurfaceDecision: a route-surface decision record (spec §2.2 "Route-surface decision
//! record", §4.1): an overlay decision plus the surface kind.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::overlay_decision::{DecisionSpec, DecisionStatus};

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
    status = "DecisionStatus",
    printcolumn = r#"{"name":"Surface","type":"string","jsonPath":".spec.surfaceKind"}"#,
    printcolumn = r#"{"name":"Operation","type":"string","jsonPath":".spec.operationKey"}"#,
    printcolumn = r#"{"name":"Decision","type":"string","jsonPath":".spec.decision"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RouteSurfaceDecisionSpec {
    /// Operation, decision, reason, source, capability and context, as every decision holds.
    #[serde(flatten)]
    pub decision: DecisionSpec,
    /// Kind of route surface decided on, e.g. `generated-access`.
    #[schemars(length(min = 1))]
    pub surface_kind: String,
}
