//! Spec §2.2 `latestRuntimeControl`: the latest stop, start or restart of the Resource.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::runtime_control::{PhaseStatus, RuntimeControlState, RuntimeOperation, RuntimeState};

/// Spec §2.2 `latestRuntimeControl`: one runtime control attempt and its phases.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlBlock {
    pub runtime_control_attempt_id: String,
    /// `stop`, `start` or `restart`.
    pub operation: RuntimeOperation,
    /// `accepted`, `running`, `succeeded`, `failed` or `blocked`.
    pub status: RuntimeControlState,
    pub started_at: String,
    pub completed_at: Option<String>,
    /// `running`, `starting`, `stopping`, `stopped`, `restarting`, `not-deployed` or `unknown`.
    pub runtime_state: RuntimeState,
    /// e.g. `resource-archived`.
    pub blocked_reason: Option<String>,
    pub error_code: Option<String>,
    pub phases: Vec<RuntimeControlPhaseBlock>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlPhaseBlock {
    /// `validate`, `stop`, `start` or `verify`.
    pub phase: String,
    /// `pending`, `running`, `succeeded`, `failed` or `skipped`.
    pub status: PhaseStatus,
    pub error_code: Option<String>,
}
