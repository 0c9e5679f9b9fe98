//! Deployment progress events (spec §6): what `POST /deployments/stream` sends and what a
//! deployment's timeline keeps. Shared by the controller, which records them, the REST shim,
//! which streams and serves them, and the CLI, which shows them. `berth-crds` re-exports them
//! (a Deployment's status carries the phase and step).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Steps every attempt reports (spec §6 `step.total`): detect, plan, package, deploy, verify.
pub const TOTAL_STEPS: i64 = 5;

/// Phase of a deployment attempt.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeploymentPhase {
    Detect,
    Plan,
    Package,
    Deploy,
    Verify,
    Rollback,
}

/// Progress through a deployment's steps.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentStep {
    /// Number of the current step, from 1.
    pub current: i64,
    /// Number of steps.
    pub total: i64,
    /// What the current step does.
    pub label: String,
}

/// `data` of one deployment progress event (spec §6), also one entry of a timeline.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProgressEvent {
    /// When the event was emitted (RFC 3339, UTC).
    pub timestamp: String,
    /// `platform` for Berth's own steps, `application` for output of the user's build.
    pub source: Source,
    pub phase: DeploymentPhase,
    pub level: Level,
    /// What happened; never holds a secret value.
    pub message: String,
    pub deployment_id: String,
    pub status: StreamStatus,
    /// Progress through the attempt's steps (1 <= current <= total).
    pub step: DeploymentStep,
    /// For `application` output: the stream the line came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<OutputStream>,
}

/// Who an event comes from.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Platform,
    Application,
}

/// Severity of an event.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

/// Where the attempt stands, as an event reports it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StreamStatus {
    Running,
    Succeeded,
    Failed,
}

/// The output stream of an `application` line.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_use_the_spec_spellings_and_omit_an_absent_stream() {
        let event = ProgressEvent {
            timestamp: "2026-11-22T06:00:00.000Z".into(),
            source: Source::Application,
            phase: DeploymentPhase::Package,
            level: Level::Info,
            message: "Step 1/3 : FROM berth/busybox:1".into(),
            deployment_id: "dep-web-1".into(),
            status: StreamStatus::Running,
            step: DeploymentStep {
                current: 3,
                total: 5,
                label: "Building".into(),
            },
            stream: Some(OutputStream::Stdout),
        };
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(value["source"], "application");
        assert_eq!(value["stream"], "stdout");
        assert_eq!(value["deploymentId"], "dep-web-1");
        let back: ProgressEvent = serde_json::from_value(value).unwrap();
        assert_eq!(back, event);
        let platform = ProgressEvent {
            source: Source::Platform,
            stream: None,
            ..event
        };
        let value = serde_json::to_value(&platform).unwrap();
        assert!(value.get("stream").is_none(), "{value}");
    }
}
