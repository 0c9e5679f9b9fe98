//! ScheduledTask and ScheduledTaskRun: a command a resource runs on a schedule, and each time
//! it ran. A run is a fresh container of the resource's serving image and configuration on its
//! server (never an exec into the app's container); a scheduled run's object name carries its
//! slot, so the API server's name uniqueness makes each slot run once across controller
//! restarts and failovers.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::{OBJECT_NAME_MAX, TEXT_MAX};

pub use berth_vocabulary::scheduled_tasks::{
    ConcurrencyPolicy, RETRY_LIMIT_MAX, Schedule, ScheduleProblem, SkippedReason,
    TIMEOUT_SECONDS_MAX, TIMEOUT_SECONDS_MIN, TaskLogStream, TaskRunStatus, TaskState, TriggerKind,
};

/// Label on a run naming its task.
pub const TASK_LABEL: &str = "berth.dev/scheduled-task";
/// Label on a task run's container naming the run (with [`crate::NAMESPACE_LABEL`]).
pub const TASK_RUN_LABEL: &str = "berth.dev/scheduled-task-run";
/// Held by a run while a container of it may exist on its server: a run deleted then (its task
/// or resource deleted, or by hand) has the controller remove the container before it goes.
/// Set when the run is made, so starting it costs no extra write; released when it ends.
pub const RUN_CONTAINER_FINALIZER: &str = "berth.dev/task-run-container";
/// How long a run's command may take unless the task says.
pub const DEFAULT_TIMEOUT_SECONDS: i64 = 3600;
/// The zone a schedule is read in unless the task says.
pub const DEFAULT_TIMEZONE: &str = "UTC";

/// A command a resource runs on a schedule.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "ScheduledTask",
    namespaced,
    shortname = "btask",
    category = "berth",
    doc = "A command run on a schedule in a fresh container of a resource's image, with its configuration.",
    status = "ScheduledTaskStatus",
    printcolumn = r#"{"name":"Resource","type":"string","jsonPath":".spec.resourceId"}"#,
    printcolumn = r#"{"name":"Schedule","type":"string","jsonPath":".spec.schedule"}"#,
    printcolumn = r#"{"name":"State","type":"string","jsonPath":".spec.state"}"#,
    printcolumn = r#"{"name":"Next Run","type":"string","jsonPath":".status.nextRunAt"}"#,
    printcolumn = r#"{"name":"Last Run","type":"string","jsonPath":".status.latestRun.status"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskSpec {
    /// Id (object name) of the Resource whose image and configuration the task runs with.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub resource_id: String,
    /// Five-field cron pattern (minute hour day-of-month month day-of-week) or `@hourly`,
    /// `@daily`, `@weekly`, `@monthly`, `@yearly`.
    #[schemars(length(min = 1, max = 120))]
    pub schedule: String,
    /// IANA time zone the schedule is read in, daylight-saving changes included; default UTC.
    #[serde(default = "default_timezone")]
    #[schemars(length(min = 1, max = 64))]
    pub timezone: String,
    /// The command, run by `/bin/sh -c` in the run's container.
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub command: String,
    /// Seconds a run may take before it is stopped and recorded failed; default 3600.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = TIMEOUT_SECONDS_MIN, max = TIMEOUT_SECONDS_MAX))]
    pub timeout_seconds: i64,
    /// How often a failed run is tried again (0 to 10; default 0).
    #[serde(default)]
    #[schemars(range(min = 0, max = RETRY_LIMIT_MAX))]
    pub retry_limit: i64,
    /// `forbid` (default), `replace` or `allow`: what a slot does while a run still runs.
    #[serde(default)]
    pub concurrency_policy: ConcurrencyPolicy,
    /// `enabled` (default) or `disabled` (slots pass without a run).
    #[serde(default)]
    pub state: TaskState,
    /// Whether a slot missed while Berth could not run it (controller or server down) is run
    /// once, late, when Berth is back. It is recorded `missed` either way.
    #[serde(default)]
    pub run_missed: bool,
}

fn default_timezone() -> String {
    DEFAULT_TIMEZONE.to_string()
}

fn default_timeout() -> i64 {
    DEFAULT_TIMEOUT_SECONDS
}

impl ScheduledTaskSpec {
    /// The spec's schedule, or why it cannot be used (naming the field).
    pub fn parsed_schedule(&self) -> Result<Schedule, ScheduleProblem> {
        Schedule::parse(&self.schedule, &self.timezone)
    }
}

/// What the controller observed about a task.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskStatus {
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the next scheduled run is due (RFC 3339); absent while disabled or invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
    /// The last slot the controller has handled (run, skipped or recorded missed), RFC 3339:
    /// slots after it and before now were missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_slot: Option<String>,
    /// The newest run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_run: Option<LatestRun>,
    /// `Ready` while the schedule is valid and its resource exists.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The newest run of a task, as its list shows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LatestRun {
    /// Name of the ScheduledTaskRun.
    pub name: String,
    pub status: TaskRunStatus,
}

/// One run of a scheduled task.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "ScheduledTaskRun",
    namespaced,
    shortname = "btaskrun",
    category = "berth",
    doc = "One run of a scheduled task: its container, exit code and outcome (its output is in the observation store).",
    status = "ScheduledTaskRunStatus",
    printcolumn = r#"{"name":"Task","type":"string","jsonPath":".spec.taskId"}"#,
    printcolumn = r#"{"name":"Trigger","type":"string","jsonPath":".spec.triggerKind"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Exit","type":"integer","jsonPath":".status.exitCode"}"#,
    printcolumn = r#"{"name":"Scheduled For","type":"string","jsonPath":".spec.scheduledFor"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskRunSpec {
    /// Id (object name) of the ScheduledTask.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub task_id: String,
    /// Id (object name) of the task's Resource.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub resource_id: String,
    /// `scheduled` or `manual`.
    pub trigger_kind: TriggerKind,
    /// The slot a scheduled run is for (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_for: Option<String>,
    /// The task's command when the run was made (a later change of the task does not change
    /// a run already made).
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub command: String,
    /// The task's timeout when the run was made: a try still running after it is stopped.
    #[schemars(range(min = TIMEOUT_SECONDS_MIN, max = TIMEOUT_SECONDS_MAX))]
    pub timeout_seconds: i64,
    /// The task's retry limit when the run was made: failed tries after the first.
    #[serde(default)]
    #[schemars(range(min = 0, max = RETRY_LIMIT_MAX))]
    pub retry_limit: i64,
    /// Set when the run is made already ended: `skipped` or `missed` (not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<NotRun>,
}

/// A run recorded without running.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotRun {
    /// `skipped` or `missed`.
    pub status: TaskRunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_reason: Option<SkippedReason>,
    /// Why, in one line.
    pub summary: String,
}

/// What happened to a run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskRunStatus {
    /// `accepted`, `running`, `succeeded`, `failed`, `skipped` or `missed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskRunStatus>,
    /// Which try runs or ran last (1 = the first; retries count up to 1 + retryLimit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i64>,
    /// The container of the current try.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Id (object name) of the Server the run's container is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// The image the run's container was made of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// When the first try started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When the current try started (RFC 3339): its timeout counts from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_started_at: Option<String>,
    /// When the run ended (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The command's exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Whether Berth stopped the current try at its timeout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Why it failed, was skipped or missed, in one line (no secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_reason: Option<SkippedReason>,
    /// `Ready` is True once the run succeeded, False once it failed, was skipped or missed,
    /// Unknown while it is accepted or running.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl ScheduledTaskRun {
    /// Where the run stands (`accepted` until the controller wrote a status).
    pub fn run_status(&self) -> TaskRunStatus {
        self.status
            .as_ref()
            .and_then(|s| s.status)
            .unwrap_or(TaskRunStatus::Accepted)
    }
}

/// Name of the run a task makes for a slot: the same for every controller that makes it, so
/// only one such object can exist.
pub fn scheduled_run_name(task: &str, slot_unix_seconds: i64) -> String {
    let name = format!("{task}-{slot_unix_seconds}");
    // Object names are at most 253 characters: a long task name keeps its slot digits.
    if name.len() <= OBJECT_NAME_MAX {
        return name;
    }
    let suffix = format!("-{slot_unix_seconds}");
    format!("{}{suffix}", &task[..OBJECT_NAME_MAX - suffix.len()])
}

/// The owner part of a run's log key in the observation store (`TimelineKey`'s resource part,
/// with the run's name as its attempt): the task's, so a resource's own attempts do not count
/// its task runs.
pub fn run_log_owner(task: &str) -> String {
    format!("scheduled-task/{task}")
}

/// Name of a try's container on the server: the run and the try, so a controller that started
/// it and died finds it again instead of starting a second.
pub fn run_container_name(namespace: &str, run: &str, attempt: i64) -> String {
    format!("berth-task-{namespace}-{run}-{attempt}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slots_run_is_named_by_task_and_slot() {
        assert_eq!(
            scheduled_run_name("nightly", 1_796_263_200),
            "nightly-1796263200"
        );
        let long = "a".repeat(250);
        let name = scheduled_run_name(&long, 1_796_263_200);
        assert_eq!(name.len(), OBJECT_NAME_MAX);
        assert!(name.ends_with("-1796263200"));
    }

    #[test]
    fn a_task_defaults_to_utc_an_hour_forbid_and_enabled() {
        let spec: ScheduledTaskSpec = serde_json::from_value(serde_json::json!({
            "resourceId": "web", "schedule": "@daily", "command": "echo hi"
        }))
        .unwrap();
        assert_eq!(spec.timezone, "UTC");
        assert_eq!(spec.timeout_seconds, 3600);
        assert_eq!(spec.concurrency_policy, ConcurrencyPolicy::Forbid);
        assert_eq!(spec.state, TaskState::Enabled);
        assert!(spec.parsed_schedule().is_ok());
    }
}
