//! Spec §2.2 `latestRuntimeControl`: the latest stop, start or restart of the Resource.

use super::timestamp;
use crate::runtime_control::{
    PhaseStatus, RuntimeControlAttempt, RuntimeControlState, RuntimeOperation, RuntimeState,
};
use schemars::JsonSchema;
use serde::Serialize;

/// Spec §2.2 `latestRuntimeControl`: one runtime control attempt and its phases.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
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

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlPhaseBlock {
    /// `validate`, `stop`, `start` or `verify`.
    pub phase: String,
    /// `pending`, `running`, `succeeded`, `failed` or `skipped`.
    pub status: PhaseStatus,
    pub error_code: Option<String>,
}

/// The `latestRuntimeControl` block of a runtime control attempt (the Resource's
/// `status.runtimeControl.latest`, or the record the REST action answers with).
pub fn runtime_control_block(attempt: &RuntimeControlAttempt) -> RuntimeControlBlock {
    RuntimeControlBlock {
        runtime_control_attempt_id: attempt.runtime_control_attempt_id.clone(),
        operation: attempt.operation,
        status: attempt.status,
        started_at: timestamp(&attempt.started_at),
        completed_at: attempt.completed_at.as_ref().map(timestamp),
        runtime_state: attempt.runtime_state,
        blocked_reason: attempt.blocked_reason.clone(),
        error_code: attempt.error_code.clone(),
        phases: attempt
            .phases
            .iter()
            .map(|p| RuntimeControlPhaseBlock {
                phase: p.phase.clone(),
                status: p.status,
                error_code: p.error_code.clone(),
            })
            .collect(),
    }
}
