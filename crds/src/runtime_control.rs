//! Runtime control of a Resource: stop, start and restart of its serving container (spec §2.2
//! "Resource health" `latestRuntimeControl`, §7 blocked reason `resource-archived`).
//!
//! The wish lives in the spec (`spec.runtime`), so GitOps tools and the REST actions write the
//! same field; what the controller did about it lives in the status (`status.runtimeControl`):
//! the latest attempt with its phases, and the state the controller now keeps the runtime in.
//! A crash between two steps loses nothing: an attempt that has not succeeded is carried out
//! again from the start, and every step is idempotent.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::TEXT_MAX;

/// Whether the resource's runtime should run.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DesiredRuntimeState {
    #[default]
    Running,
    /// Stopped on request: drift repair leaves the container stopped.
    Stopped,
}

/// `spec.runtime`: the runtime state the user asks for.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlSpec {
    /// `running` (default) or `stopped`; a stopped resource stays stopped until set back.
    #[serde(default)]
    pub desired_state: DesiredRuntimeState,
    /// Any new value restarts the running container once (like `kubectl rollout restart`'s
    /// annotation); the REST `restart` action writes the current time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub restart_requested_at: Option<String>,
}

pub use berth_vocabulary::runtime_control::{
    PHASE_START, PHASE_STOP, PHASE_VALIDATE, PHASE_VERIFY, PhaseStatus, RuntimeControlState,
    RuntimeOperation, RuntimeState,
};

/// One phase of an attempt.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlPhase {
    /// `validate`, `stop`, `start` or `verify`.
    pub phase: String,
    /// `pending`, `running`, `succeeded`, `failed` or `skipped`.
    pub status: PhaseStatus,
    /// Machine-readable cause of a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

/// One runtime control attempt (spec §2.2 `latestRuntimeControl`), and the wish it carries out.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlAttempt {
    /// `rtc-<resource>-<generation>`: the Resource generation that asked for it.
    pub runtime_control_attempt_id: String,
    /// `stop`, `start` or `restart`.
    pub operation: RuntimeOperation,
    /// `accepted`, `running`, `succeeded`, `failed` or `blocked`.
    pub status: RuntimeControlState,
    /// When the attempt was accepted.
    pub started_at: Time,
    /// When it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// The runtime's state as of the attempt's latest step.
    pub runtime_state: RuntimeState,
    /// Why the attempt waits, e.g. `resource-archived`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// Machine-readable cause of a failure, e.g. `server_unreachable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// What happened, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The attempt's phases in order, each with its status.
    pub phases: Vec<RuntimeControlPhase>,
    /// `spec.runtime.desiredState` this attempt carries out.
    pub desired_state: DesiredRuntimeState,
    /// `spec.runtime.restartRequestedAt` this attempt carries out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_requested_at: Option<String>,
}

/// `status.runtimeControl`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlStatus {
    /// The state the controller keeps the runtime in: the last attempt that succeeded.
    pub applied_state: DesiredRuntimeState,
    /// The latest attempt.
    pub latest: RuntimeControlAttempt,
}

/// Blocked reason: the resource's project or environment is archived (spec §7).
pub const BLOCKED_RESOURCE_ARCHIVED: &str = "resource-archived";
/// Blocked reason: a restart was asked for while the resource is to stay stopped.
pub const BLOCKED_RUNTIME_STOPPED: &str = "runtime-stopped";

/// The id of the attempt a Resource generation asks for.
pub fn attempt_id(resource: &str, generation: i64) -> String {
    format!("rtc-{resource}-{generation}")
}

/// What the controller should do about `spec.runtime`, given what the status says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// The wish is carried out.
    Nothing,
    /// A new wish: a new attempt with this operation.
    Begin(RuntimeOperation),
    /// The latest attempt has not succeeded yet (it failed, waits, or a crash interrupted it).
    Resume(RuntimeOperation),
}

/// The wish as the status records it: `(desiredState, restartRequestedAt)`.
fn intent(spec: &RuntimeControlSpec) -> (DesiredRuntimeState, Option<&str>) {
    (spec.desired_state, spec.restart_requested_at.as_deref())
}

/// Decides the next step from the spec's wish and the status (pure; the controller's plan).
pub fn next(spec: &RuntimeControlSpec, status: Option<&RuntimeControlStatus>) -> Next {
    let applied = status.map_or(DesiredRuntimeState::Running, |s| s.applied_state);
    let handled = status.map(|s| &s.latest);
    let handled_intent = handled.map_or((DesiredRuntimeState::Running, None), |a| {
        (a.desired_state, a.restart_requested_at.as_deref())
    });
    if intent(spec) == handled_intent {
        return match handled {
            Some(a) if a.status != RuntimeControlState::Succeeded => Next::Resume(a.operation),
            _ => Next::Nothing,
        };
    }
    let restart_asked = spec.restart_requested_at.as_deref() != handled_intent.1
        && spec.restart_requested_at.is_some();
    let operation = match (spec.desired_state, applied) {
        (DesiredRuntimeState::Stopped, DesiredRuntimeState::Running) => RuntimeOperation::Stop,
        _ if restart_asked => RuntimeOperation::Restart,
        (DesiredRuntimeState::Running, DesiredRuntimeState::Stopped) => RuntimeOperation::Start,
        _ => return Next::Nothing,
    };
    Next::Begin(operation)
}

/// The state the runtime is kept in once `operation` succeeded.
pub fn target_state(operation: RuntimeOperation) -> DesiredRuntimeState {
    match operation {
        RuntimeOperation::Stop => DesiredRuntimeState::Stopped,
        RuntimeOperation::Start | RuntimeOperation::Restart => DesiredRuntimeState::Running,
    }
}

impl RuntimeControlAttempt {
    /// A new attempt, as the REST action answers it before the controller begins.
    pub fn accepted(
        id: String,
        operation: RuntimeOperation,
        spec: &RuntimeControlSpec,
        now: Time,
    ) -> Self {
        Self {
            runtime_control_attempt_id: id,
            operation,
            status: RuntimeControlState::Accepted,
            started_at: now,
            completed_at: None,
            runtime_state: operation.transitional_state(),
            blocked_reason: None,
            error_code: None,
            message: None,
            phases: operation
                .phases()
                .iter()
                .map(|phase| RuntimeControlPhase {
                    phase: (*phase).to_string(),
                    status: PhaseStatus::Pending,
                    error_code: None,
                })
                .collect(),
            desired_state: spec.desired_state,
            restart_requested_at: spec.restart_requested_at.clone(),
        }
    }

    /// Sets one phase's status (and error code).
    pub fn set_phase(&mut self, phase: &str, status: PhaseStatus, error_code: Option<&str>) {
        if let Some(entry) = self.phases.iter_mut().find(|p| p.phase == phase) {
            entry.status = status;
            entry.error_code = error_code.map(str::to_string);
        }
    }

    /// Every phase still pending becomes `status` (skipped after a block, say).
    pub fn settle_pending(&mut self, status: PhaseStatus) {
        for entry in self
            .phases
            .iter_mut()
            .filter(|p| p.status == PhaseStatus::Pending)
        {
            entry.status = status;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn spec(state: DesiredRuntimeState, restart: Option<&str>) -> RuntimeControlSpec {
        RuntimeControlSpec {
            desired_state: state,
            restart_requested_at: restart.map(str::to_string),
        }
    }

    fn status(
        wish: &RuntimeControlSpec,
        operation: RuntimeOperation,
        state: RuntimeControlState,
        applied: DesiredRuntimeState,
    ) -> RuntimeControlStatus {
        let mut latest = RuntimeControlAttempt::accepted(
            "rtc-web-2".into(),
            operation,
            wish,
            Time(Timestamp::UNIX_EPOCH),
        );
        latest.status = state;
        RuntimeControlStatus {
            applied_state: applied,
            latest,
        }
    }

    use DesiredRuntimeState::{Running, Stopped};
    use RuntimeOperation::{Restart, Start, Stop};

    #[test]
    fn a_resource_without_a_wish_needs_nothing() {
        assert_eq!(next(&RuntimeControlSpec::default(), None), Next::Nothing);
    }

    #[test]
    fn a_changed_desired_state_stops_or_starts() {
        assert_eq!(next(&spec(Stopped, None), None), Next::Begin(Stop));
        let stopped = spec(Stopped, None);
        let done = status(&stopped, Stop, RuntimeControlState::Succeeded, Stopped);
        assert_eq!(next(&stopped, Some(&done)), Next::Nothing);
        assert_eq!(next(&spec(Running, None), Some(&done)), Next::Begin(Start));
    }

    #[test]
    fn a_new_restart_token_restarts_once_and_starts_a_stopped_runtime() {
        let once = spec(Running, Some("t1"));
        assert_eq!(next(&once, None), Next::Begin(Restart));
        let done = status(&once, Restart, RuntimeControlState::Succeeded, Running);
        assert_eq!(next(&once, Some(&done)), Next::Nothing);
        assert_eq!(
            next(&spec(Running, Some("t2")), Some(&done)),
            Next::Begin(Restart)
        );
        // Stopped, then restarted through the REST action (running and a new token).
        let stopped = status(
            &spec(Stopped, None),
            Stop,
            RuntimeControlState::Succeeded,
            Stopped,
        );
        assert_eq!(next(&once, Some(&stopped)), Next::Begin(Restart));
        // A token while the wish is to stay stopped: a restart that will be blocked.
        let stay = spec(Stopped, Some("t1"));
        assert_eq!(next(&stay, Some(&stopped)), Next::Begin(Restart));
    }

    #[test]
    fn an_unfinished_attempt_is_resumed_until_it_succeeds() {
        let stopped = spec(Stopped, None);
        for state in [
            RuntimeControlState::Accepted,
            RuntimeControlState::Running,
            RuntimeControlState::Failed,
            RuntimeControlState::Blocked,
        ] {
            let pending = status(&stopped, Stop, state, Running);
            assert_eq!(
                next(&stopped, Some(&pending)),
                Next::Resume(Stop),
                "{state:?}"
            );
        }
    }

    #[test]
    fn the_accepted_record_lists_every_phase_pending() {
        let attempt = RuntimeControlAttempt::accepted(
            attempt_id("web", 3),
            Restart,
            &spec(Running, Some("t")),
            Time(Timestamp::UNIX_EPOCH),
        );
        assert_eq!(attempt.runtime_control_attempt_id, "rtc-web-3");
        assert_eq!(attempt.runtime_state, RuntimeState::Restarting);
        let phases: Vec<&str> = attempt.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(phases, ["validate", "stop", "start", "verify"]);
        assert!(
            attempt
                .phases
                .iter()
                .all(|p| p.status == PhaseStatus::Pending)
        );
        assert_eq!(RuntimeOperation::parse("halt"), None);
        assert_eq!(RuntimeOperation::parse("stop"), Some(Stop));
    }
}
