//! Conditions as the REST API shows them: the kstatus-style conditions of an object's status,
//! with the transition time as text (`berth-crds` keeps Kubernetes' own time type).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Status of a condition, as Kubernetes spells it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// One observation about an object, in the shape kstatus and Flux understand.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionRecord {
    /// Condition type in CamelCase, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether the condition holds: `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// Machine-readable reason in CamelCase.
    pub reason: String,
    /// Human-readable explanation.
    pub message: String,
    /// When `status` last changed.
    #[schemars(extend("format" = "date-time"))]
    pub last_transition_time: String,
    /// The `metadata.generation` this condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
