//! Spec §2.2 `latestRuntimeControl`: the block of the Resource's latest stop, start or restart.

use super::timestamp;
use super::{RuntimeControlBlock, RuntimeControlPhaseBlock};
use crate::runtime_control::RuntimeControlAttempt;

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
