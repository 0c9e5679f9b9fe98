//! Scheduled tasks (Appaloft's `/scheduled-tasks` and `/scheduled-task-runs` routes and
//! records): a command a resource runs on a schedule in a fresh container of its image, each
//! time it ran, and what each run printed. Berth adds `concurrencyPolicy` `replace` and
//! `allow`, `runMissed`, a task's `nextRunAt` and a run's `attempt`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::{OBJECT_NAME_MAX, TEXT_MAX};
use crate::validate::{Checked, FieldError, bounded, in_range, optional_text};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::scheduled_tasks::{
    ConcurrencyPolicy, RETRY_LIMIT_MAX, Schedule, ScheduleProblem, SkippedReason,
    TIMEOUT_SECONDS_MAX, TIMEOUT_SECONDS_MIN, TaskLogStream, TaskRunStatus, TaskState, TriggerKind,
};

/// Answer of a create or configure.
pub const COMMAND_SCHEMA: &str = "scheduled-tasks.command/v1";
/// `GET /scheduled-tasks`.
pub const LIST_SCHEMA: &str = "scheduled-tasks.list/v1";
/// `GET /scheduled-tasks/{taskId}`.
pub const SHOW_SCHEMA: &str = "scheduled-tasks.show/v1";
/// `DELETE /scheduled-tasks/{taskId}`.
pub const DELETE_SCHEMA: &str = "scheduled-tasks.delete/v1";
/// `POST /scheduled-tasks/{taskId}/runs`.
pub const RUN_NOW_SCHEMA: &str = "scheduled-tasks.run-now/v1";
/// `GET /scheduled-task-runs`.
pub const RUNS_LIST_SCHEMA: &str = "scheduled-task-runs.list/v1";
/// `GET /scheduled-task-runs/{runId}`.
pub const RUN_SHOW_SCHEMA: &str = "scheduled-task-runs.show/v1";
/// `GET /scheduled-task-runs/{runId}/logs`.
pub const RUN_LOGS_SCHEMA: &str = "scheduled-task-runs.logs/v1";
/// The zone a schedule is read in when the request names none.
pub const DEFAULT_TIMEZONE: &str = "UTC";
/// Longest schedule (the CRD's limit).
pub const SCHEDULE_MAX: usize = 120;
/// Longest time zone name (the CRD's limit).
pub const TIMEZONE_MAX: usize = 64;
/// Longest idempotency key.
pub const IDEMPOTENCY_KEY_MAX: usize = 255;
/// Most items of one page of a list; also the default.
pub const PAGE_LIMIT_MAX: u64 = 100;

/// `POST /scheduled-tasks`: a task for a resource.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateScheduledTask {
    /// The resource whose image and configuration the command runs with.
    pub resource_id: String,
    /// Five-field cron pattern (minute hour day-of-month month day-of-week, such as
    /// `*/15 * * * *`) or `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`.
    pub schedule: String,
    /// IANA time zone the schedule is read in (default `UTC`), daylight-saving changes
    /// included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// The command, run by `/bin/sh -c` in a fresh container of the resource's image.
    pub command_intent: String,
    /// Seconds a run may take before it is stopped and recorded failed (1-86400, default
    /// 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// How often a failed run is tried again (0-10, default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<i64>,
    /// What a due run does while another still runs: `forbid` (default: it is skipped),
    /// `replace` or `allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    /// `enabled` (default) or `disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// Berth: whether a slot missed while Berth could not run it is run once, late (default
    /// false; it is recorded `missed` either way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_missed: Option<bool>,
    /// A repeat with the same key answers the task the first request made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl CreateScheduledTask {
    /// The zone the schedule is read in.
    pub fn timezone(&self) -> &str {
        self.timezone.as_deref().unwrap_or(DEFAULT_TIMEZONE)
    }

    /// Every rule the request can be checked by without the cluster.
    pub fn validate(&self) -> Checked {
        bounded("resourceId", &self.resource_id, OBJECT_NAME_MAX)?;
        check_limits(self.timeout_seconds, self.retry_limit)?;
        bounded("commandIntent", &self.command_intent, TEXT_MAX)?;
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )?;
        check_schedule(&self.schedule, self.timezone())
    }
}

/// `POST /scheduled-tasks/{taskId}`: change some of a task; absent fields stay.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigureScheduledTask {
    /// The task's resource, if given (it cannot change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_intent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    /// `enabled` or `disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_missed: Option<bool>,
    /// Accepted for Appaloft's clients; a configure is idempotent by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl ConfigureScheduledTask {
    /// The checks of each given field; the schedule is checked against the zone it will be
    /// read in once merged with the task ([`check_schedule`]).
    pub fn validate(&self) -> Checked {
        optional_text("resourceId", self.resource_id.as_ref(), OBJECT_NAME_MAX)?;
        optional_text("schedule", self.schedule.as_ref(), SCHEDULE_MAX)?;
        optional_text("timezone", self.timezone.as_ref(), TIMEZONE_MAX)?;
        check_limits(self.timeout_seconds, self.retry_limit)?;
        optional_text("commandIntent", self.command_intent.as_ref(), TEXT_MAX)?;
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )
    }
}

/// `DELETE /scheduled-tasks/{taskId}` (an empty body is accepted). Its runs go with it; their
/// logs stay in the observation store until retention removes them.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteScheduledTask {
    /// The task's resource, if given (a mismatch is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// Accepted for Appaloft's clients; a delete is idempotent by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl DeleteScheduledTask {
    pub fn validate(&self) -> Checked {
        optional_text("resourceId", self.resource_id.as_ref(), OBJECT_NAME_MAX)?;
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )
    }
}

/// `POST /scheduled-tasks/{taskId}/runs` (an empty body is accepted): run the task's command
/// now, whatever its schedule and status.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunScheduledTaskNow {
    /// The task's resource, if given (a mismatch is refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// A repeat with the same key answers the run the first request made instead of
    /// starting another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl RunScheduledTaskNow {
    pub fn validate(&self) -> Checked {
        optional_text("resourceId", self.resource_id.as_ref(), OBJECT_NAME_MAX)?;
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )
    }
}

/// `timeoutSeconds` and `retryLimit` within their ranges.
pub fn check_limits(timeout_seconds: Option<i64>, retry_limit: Option<i64>) -> Checked {
    in_range(
        "timeoutSeconds",
        timeout_seconds,
        TIMEOUT_SECONDS_MIN,
        TIMEOUT_SECONDS_MAX,
    )?;
    in_range("retryLimit", retry_limit, 0, RETRY_LIMIT_MAX)
}

/// A schedule and the zone it is read in, as the controller will read them: a refusal names
/// `schedule` or `timezone`.
pub fn check_schedule(schedule: &str, timezone: &str) -> Checked {
    bounded("schedule", schedule, SCHEDULE_MAX)?;
    bounded("timezone", timezone, TIMEZONE_MAX)?;
    Schedule::parse(schedule, timezone)
        .map(drop)
        .map_err(|problem| FieldError::new(problem.field, problem.message))
}

/// One run of a task (Appaloft's scheduled task run summary).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskRunSummary {
    pub run_id: String,
    pub task_id: String,
    pub resource_id: String,
    /// `manual` or `scheduled`.
    pub trigger_kind: TriggerKind,
    /// `accepted`, `running`, `succeeded`, `failed`, `skipped` or (Berth) `missed`.
    pub status: TaskRunStatus,
    /// The slot a scheduled run is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_for: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// Why it failed, was skipped or missed, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_reason: Option<SkippedReason>,
    /// Berth: which try runs or ran last (1 = the first; up to 1 + retryLimit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i64>,
}

/// A task (Appaloft's scheduled task definition summary).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskSummary {
    pub task_id: String,
    pub resource_id: String,
    pub schedule: String,
    pub timezone: String,
    pub command_intent: String,
    pub timeout_seconds: i64,
    pub retry_limit: i64,
    pub concurrency_policy: ConcurrencyPolicy,
    /// `enabled` or `disabled`.
    pub status: TaskState,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// The newest run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_run: Option<ScheduledTaskRunSummary>,
    /// Berth: when the next scheduled run is due, as the controller computed it (absent
    /// while disabled, invalid, or not yet reconciled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
    /// Berth: whether a missed slot is run once, late.
    pub run_missed: bool,
}

/// Answer of `POST /scheduled-tasks` (201) and `POST /scheduled-tasks/{taskId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskCommandResponse {
    /// `scheduled-tasks.command/v1`.
    pub schema_version: String,
    pub task: ScheduledTaskSummary,
}

/// Answer of `DELETE /scheduled-tasks/{taskId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteScheduledTaskResponse {
    /// `scheduled-tasks.delete/v1`.
    pub schema_version: String,
    pub task_id: String,
    pub resource_id: String,
    /// `deleted`.
    pub status: String,
    pub deleted_at: String,
}

/// Answer of `POST /scheduled-tasks/{taskId}/runs` (202): the run, `accepted` until the
/// controller starts it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RunScheduledTaskNowResponse {
    /// `scheduled-tasks.run-now/v1`.
    pub schema_version: String,
    pub run: ScheduledTaskRunSummary,
}

/// `GET /scheduled-tasks`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskList {
    /// `scheduled-tasks.list/v1`.
    pub schema_version: String,
    pub items: Vec<ScheduledTaskSummary>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    pub generated_at: String,
}

/// `GET /scheduled-tasks/{taskId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskShow {
    /// `scheduled-tasks.show/v1`.
    pub schema_version: String,
    pub task: ScheduledTaskSummary,
    pub generated_at: String,
}

/// `GET /scheduled-task-runs`, newest first.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskRunList {
    /// `scheduled-task-runs.list/v1`.
    pub schema_version: String,
    pub items: Vec<ScheduledTaskRunSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    pub generated_at: String,
}

/// `GET /scheduled-task-runs/{runId}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskRunShow {
    /// `scheduled-task-runs.show/v1`.
    pub schema_version: String,
    pub run: ScheduledTaskRunSummary,
    pub generated_at: String,
}

/// One line a run printed, or Berth's own line about it (`system`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskRunLogEntry {
    pub timestamp: String,
    /// `stdout`, `stderr` or `system`.
    pub stream: TaskLogStream,
    /// The line, secret values masked.
    pub message: String,
}

/// `GET /scheduled-task-runs/{runId}/logs`, oldest first.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ScheduledTaskRunLogs {
    /// `scheduled-task-runs.logs/v1`.
    pub schema_version: String,
    pub run_id: String,
    pub task_id: String,
    pub resource_id: String,
    pub entries: Vec<ScheduledTaskRunLogEntry>,
    /// Pass as `cursor` for the lines after these; absent when there are none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    pub generated_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn create(patch: Value) -> CreateScheduledTask {
        let mut body = json!({
            "resourceId": "res-1", "schedule": "*/5 * * * *", "commandIntent": "echo hi",
        });
        for (key, value) in patch.as_object().unwrap() {
            body[key] = value.clone();
        }
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn a_create_request_names_the_field_it_breaks() {
        assert!(create(json!({})).validate().is_ok());
        let berlin = create(json!({"timezone": "Europe/Berlin", "schedule": "@daily"}));
        assert!(berlin.validate().is_ok());
        assert_eq!(create(json!({})).timezone(), "UTC");
        for (patch, field) in [
            (json!({"schedule": "every day"}), "schedule"),
            (json!({"schedule": "* * * *"}), "schedule"),
            (json!({"schedule": ""}), "schedule"),
            (json!({"timezone": "Mars/Olympus"}), "timezone"),
            (json!({"timezone": ""}), "timezone"),
            (json!({"timeoutSeconds": 0}), "timeoutSeconds"),
            (json!({"timeoutSeconds": 86_401}), "timeoutSeconds"),
            (json!({"retryLimit": 11}), "retryLimit"),
            (json!({"retryLimit": -1}), "retryLimit"),
            (json!({"commandIntent": "  "}), "commandIntent"),
            (json!({"resourceId": ""}), "resourceId"),
        ] {
            let error = create(patch.clone()).validate().unwrap_err();
            assert_eq!(error.field, field, "{patch}: {error}");
        }
        let error = create(json!({"timeoutSeconds": 0})).validate().unwrap_err();
        assert_eq!((error.min, error.max), (Some(1), Some(86_400)));
    }

    #[test]
    fn policies_and_states_are_the_apis_words() {
        let body = create(json!({"concurrencyPolicy": "replace", "status": "disabled"}));
        assert_eq!(body.concurrency_policy, Some(ConcurrencyPolicy::Replace));
        assert_eq!(body.status, Some(TaskState::Disabled));
        let unknown = json!({"resourceId": "r", "schedule": "@daily", "commandIntent": "x",
                             "concurrencyPolicy": "queue"});
        assert!(serde_json::from_value::<CreateScheduledTask>(unknown).is_err());
    }

    #[test]
    fn a_configure_checks_only_what_it_changes() {
        assert!(ConfigureScheduledTask::default().validate().is_ok());
        let bad = ConfigureScheduledTask {
            retry_limit: Some(20),
            ..Default::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "retryLimit");
        let blank = ConfigureScheduledTask {
            schedule: Some(" ".into()),
            ..Default::default()
        };
        assert_eq!(blank.validate().unwrap_err().field, "schedule");
    }
}
