//! The vocabulary of runtime control (stop, start, restart of a Resource's serving container):
//! what an attempt does, where it and each of its phases stand, and the runtime's state it
//! reports. The Resource's status (`berth-crds`) and the health record's
//! `latestRuntimeControl` (`health`) are made of them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What one runtime control attempt does.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeOperation {
    Stop,
    Start,
    Restart,
}

impl RuntimeOperation {
    /// The operation as the REST API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Start => "start",
            Self::Restart => "restart",
        }
    }

    /// Parses the REST spelling.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Stop, Self::Start, Self::Restart]
            .into_iter()
            .find(|op| op.as_str() == text)
    }

    /// The phases the attempt goes through, in order.
    pub fn phases(self) -> &'static [&'static str] {
        match self {
            Self::Stop => &[PHASE_VALIDATE, PHASE_STOP, PHASE_VERIFY],
            Self::Start => &[PHASE_VALIDATE, PHASE_START, PHASE_VERIFY],
            Self::Restart => &[PHASE_VALIDATE, PHASE_STOP, PHASE_START, PHASE_VERIFY],
        }
    }

    /// The runtime state while the attempt runs.
    pub fn transitional_state(self) -> RuntimeState {
        match self {
            Self::Stop => RuntimeState::Stopping,
            Self::Start => RuntimeState::Starting,
            Self::Restart => RuntimeState::Restarting,
        }
    }
}

/// Checks that the attempt may run (the resource is not archived…).
pub const PHASE_VALIDATE: &str = "validate";
/// `docker stop` of the serving container.
pub const PHASE_STOP: &str = "stop";
/// `docker start` of the serving container.
pub const PHASE_START: &str = "start";
/// Docker confirms the container's new state.
pub const PHASE_VERIFY: &str = "verify";

/// Where an attempt stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeControlState {
    /// Asked for; the controller has not begun.
    Accepted,
    Running,
    Succeeded,
    /// A step failed (see `errorCode`); the controller tries again.
    Failed,
    /// Refused for now (see `blockedReason`); it proceeds once the reason is gone.
    Blocked,
}

/// The runtime's state as an attempt reports it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeState {
    Running,
    Starting,
    Stopping,
    Stopped,
    Restarting,
    /// No deployment has succeeded: there is no container to act on.
    NotDeployed,
    Unknown,
}

/// Where one phase of an attempt stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseStatus {
    Pending,
    Running,
    Succeeded,
    Failed,
    /// Nothing to do (no container yet, or the container was already in that state).
    Skipped,
}
