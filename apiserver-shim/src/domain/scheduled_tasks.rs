//! Scheduled tasks and their runs as the routes reach them: the caller's scoped lookups (a
//! task is seen by whoever sees its resource), Appaloft's summaries of a task and a run, the
//! spec a create or configure writes, the run a "run now" makes, and a run's log lines as
//! the controller stored them in the observation store.

use std::sync::Arc;

use berth_api::scheduled_tasks::{
    ConfigureScheduledTask, CreateScheduledTask, ScheduledTaskRunLogEntry, ScheduledTaskRunSummary,
    ScheduledTaskSummary, TaskLogStream, TaskRunStatus, check_schedule,
};
use berth_api::validate::FieldError;
use berth_crds::RESOURCE_LABEL;
use berth_crds::member::OrganizationRole;
use berth_crds::progress::{OutputStream, Source};
use berth_crds::scheduled_task::{
    DEFAULT_TIMEOUT_SECONDS, RUN_CONTAINER_FINALIZER, ScheduledTask, ScheduledTaskRun,
    ScheduledTaskRunSpec, ScheduledTaskSpec, TASK_LABEL, TriggerKind, run_log_owner,
};
use berth_observations::{TimelineEntry, TimelineKey};
use k8s_openapi::jiff::Timestamp;
use kube::{Resource as _, ResourceExt};

use crate::auth::{Caller, ScopeDimension};
use crate::domain::identity::updated_at;
use crate::domain::objects::find_in;
use crate::domain::time::created_at;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::token::{new_id, seeded_id};

/// Prefix of a task's id.
pub const TASK_PREFIX: &str = "tsk";

/// Whether the caller sees resource `resource_id`, and so its tasks and runs: a deploy token
/// only within its scope (a task whose resource is gone only when it has no scope).
pub fn sees_resource(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    resource_id: &str,
) -> bool {
    if !caller.sees(ScopeDimension::Resource, resource_id) {
        return false;
    }
    match find_in(&state.caches.resources, namespace, resource_id, "resource") {
        Ok(resource) => {
            caller.sees(ScopeDimension::Project, &resource.spec.project_id)
                && caller.sees(ScopeDimension::Environment, &resource.spec.environment_id)
        }
        Err(_) => !caller.is_limited(),
    }
}

/// A task of the caller's organization the caller may see, or 404.
pub fn lookup_task(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<ScheduledTask>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let namespace = &organization.namespace;
    let task = find_in(
        &state.caches.scheduled_tasks,
        namespace,
        id,
        "scheduled task",
    )?;
    if !sees_resource(state, caller, namespace, &task.spec.resource_id) {
        return Err(ApiError::not_found("scheduled task", id));
    }
    Ok(task)
}

/// A run of the caller's organization the caller may see, or 404.
pub fn lookup_run(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<ScheduledTaskRun>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let namespace = &organization.namespace;
    let run = find_in(
        &state.caches.scheduled_task_runs,
        namespace,
        id,
        "scheduled task run",
    )?;
    if !sees_resource(state, caller, namespace, &run.spec.resource_id) {
        return Err(ApiError::not_found("scheduled task run", id));
    }
    Ok(run)
}

/// A `resourceId` given with a call on an existing task must be the task's.
pub fn require_same_resource(task: &ScheduledTask, given: Option<&String>) -> ApiResult<()> {
    match given {
        Some(given) if *given != task.spec.resource_id => Err(ApiError::validation(
            "resourceId",
            format!(
                "resourceId must be the task's resource ({}); a task cannot move",
                task.spec.resource_id
            ),
        )),
        _ => Ok(()),
    }
}

/// Where a run stands, as its summary says: the controller's status, else what it was
/// recorded as when made without running, else `accepted`.
pub fn run_status(run: &ScheduledTaskRun) -> TaskRunStatus {
    let written = run.status.as_ref().and_then(|s| s.status);
    let not_run = run.spec.not_run.as_ref().map(|n| n.status);
    written.or(not_run).unwrap_or(TaskRunStatus::Accepted)
}

/// Appaloft's summary of a run.
pub fn run_summary(run: &ScheduledTaskRun) -> ScheduledTaskRunSummary {
    let status = run.status.clone().unwrap_or_default();
    let not_run = run.spec.not_run.as_ref();
    ScheduledTaskRunSummary {
        run_id: run.name_any(),
        task_id: run.spec.task_id.clone(),
        resource_id: run.spec.resource_id.clone(),
        trigger_kind: run.spec.trigger_kind,
        status: run_status(run),
        scheduled_for: run.spec.scheduled_for.clone(),
        created_at: created_at(&run.metadata),
        started_at: status.started_at,
        finished_at: status.finished_at,
        exit_code: status.exit_code,
        failure_summary: status
            .failure_summary
            .or_else(|| not_run.map(|n| n.summary.clone())),
        skipped_reason: status
            .skipped_reason
            .or_else(|| not_run.and_then(|n| n.skipped_reason)),
        attempt: status.attempt,
    }
}

/// Newest first: by creation, then by name (a scheduled run's name ends in its slot, a manual
/// one's in its request time; a run asked for with an idempotency key is named after the key,
/// so within one second it may list either side of another).
pub fn sort_newest_first(runs: &mut [Arc<ScheduledTaskRun>]) {
    runs.sort_by(|a, b| {
        let key = |r: &ScheduledTaskRun| {
            (
                r.metadata.creation_timestamp.clone().map(|t| t.0),
                r.name_any(),
            )
        };
        key(b).cmp(&key(a))
    });
}

/// Appaloft's summary of a task; its latest run is the newest of `runs` that is the task's.
pub fn task_summary(task: &ScheduledTask, runs: &[Arc<ScheduledTaskRun>]) -> ScheduledTaskSummary {
    let id = task.name_any();
    let mut own: Vec<Arc<ScheduledTaskRun>> = runs
        .iter()
        .filter(|r| r.spec.task_id == id)
        .cloned()
        .collect();
    sort_newest_first(&mut own);
    let spec = &task.spec;
    let created = created_at(&task.metadata);
    let updated = updated_at(&task.metadata);
    ScheduledTaskSummary {
        task_id: id,
        resource_id: spec.resource_id.clone(),
        schedule: spec.schedule.clone(),
        timezone: spec.timezone.clone(),
        command_intent: spec.command.clone(),
        timeout_seconds: spec.timeout_seconds,
        retry_limit: spec.retry_limit,
        concurrency_policy: spec.concurrency_policy,
        status: spec.state,
        updated_at: (updated != created).then_some(updated),
        created_at: created,
        latest_run: own.first().map(|r| run_summary(r)),
        next_run_at: task.status.as_ref().and_then(|s| s.next_run_at.clone()),
        run_missed: spec.run_missed,
    }
}

/// The spec a create writes, defaults filled in.
pub fn new_task_spec(body: &CreateScheduledTask) -> ScheduledTaskSpec {
    ScheduledTaskSpec {
        resource_id: body.resource_id.clone(),
        schedule: body.schedule.trim().to_string(),
        timezone: body.timezone().trim().to_string(),
        command: body.command_intent.clone(),
        timeout_seconds: body.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        retry_limit: body.retry_limit.unwrap_or(0),
        concurrency_policy: body.concurrency_policy.unwrap_or_default(),
        state: body.status.unwrap_or_default(),
        run_missed: body.run_missed.unwrap_or(false),
    }
}

/// `spec` with a configure's given fields; the schedule is checked in the zone it will be
/// read in, whichever of the two changed.
pub fn configured(
    spec: &ScheduledTaskSpec,
    body: &ConfigureScheduledTask,
) -> Result<ScheduledTaskSpec, FieldError> {
    body.validate()?;
    let mut next = spec.clone();
    if let Some(schedule) = &body.schedule {
        next.schedule = schedule.trim().to_string();
    }
    if let Some(timezone) = &body.timezone {
        next.timezone = timezone.trim().to_string();
    }
    if body.schedule.is_some() || body.timezone.is_some() {
        check_schedule(&next.schedule, &next.timezone)?;
    }
    if let Some(command) = &body.command_intent {
        next.command = command.clone();
    }
    next.timeout_seconds = body.timeout_seconds.unwrap_or(next.timeout_seconds);
    next.retry_limit = body.retry_limit.unwrap_or(next.retry_limit);
    next.concurrency_policy = body.concurrency_policy.unwrap_or(next.concurrency_policy);
    next.state = body.status.unwrap_or(next.state);
    next.run_missed = body.run_missed.unwrap_or(next.run_missed);
    Ok(next)
}

/// A new task's name: random, or the same for every repeat of an idempotency key in the
/// organization.
pub fn task_name(namespace: &str, idempotency_key: Option<&str>) -> String {
    match idempotency_key {
        Some(key) => seeded_id(&format!("{namespace}/scheduled-task/{key}"), TASK_PREFIX),
        None => new_id(TASK_PREFIX),
    }
}

/// A manual run's name, `<task>-m-<request time><random>`: the time first, so two runs asked
/// for in the same second (creation timestamps have seconds only) still list newest first; or
/// the same for every repeat of an idempotency key on the task.
pub fn manual_run_name(task: &ScheduledTask, idempotency_key: Option<&str>) -> String {
    let task_id = task.name_any();
    let prefix = format!("{task_id}-m");
    match idempotency_key {
        Some(key) => {
            let namespace = task.namespace().unwrap_or_default();
            seeded_id(&format!("{namespace}/{task_id}/run/{key}"), &prefix)
        }
        None => {
            let random = new_id("");
            let millis = Timestamp::now().as_millisecond().unsigned_abs();
            format!(
                "{prefix}-{}{}",
                sortable_base36(millis),
                &random[random.len() - 4..]
            )
        }
    }
}

/// `value` in 9 base-36 digits whose text sorts as the numbers do (enough for milliseconds
/// until the year 5000).
fn sortable_base36(mut value: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut text = [b'0'; 9];
    for slot in text.iter_mut().rev() {
        *slot = DIGITS[(value % 36) as usize];
        value /= 36;
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The run a "run now" makes: the task's command and limits as they are now, labelled with
/// its task and resource, owned by the task (so it goes with it).
pub fn manual_run(task: &ScheduledTask, name: &str) -> ScheduledTaskRun {
    let mut run = ScheduledTaskRun::new(
        name,
        ScheduledTaskRunSpec {
            task_id: task.name_any(),
            resource_id: task.spec.resource_id.clone(),
            trigger_kind: TriggerKind::Manual,
            scheduled_for: None,
            command: task.spec.command.clone(),
            timeout_seconds: task.spec.timeout_seconds,
            retry_limit: task.spec.retry_limit,
            not_run: None,
        },
    );
    run.metadata.namespace = task.namespace();
    run.metadata.labels = Some(
        [
            (TASK_LABEL.to_string(), task.name_any()),
            (RESOURCE_LABEL.to_string(), task.spec.resource_id.clone()),
        ]
        .into(),
    );
    // Controlled by its task, as the runs the controller makes are (its watch of a task's
    // runs follows this reference).
    run.metadata.owner_references = task.controller_owner_ref(&()).map(|owner| vec![owner]);
    run.metadata.finalizers = Some(vec![RUN_CONTAINER_FINALIZER.to_string()]);
    run
}

/// Where the controller stores a run's output lines: under its task, so the resource's own
/// deployment attempts do not count them.
pub fn log_key(run: &ScheduledTaskRun) -> TimelineKey {
    TimelineKey::new(
        run.namespace().unwrap_or_default(),
        run_log_owner(&run.spec.task_id),
        run.name_any(),
    )
}

/// A stored line as the API shows it: the command's output by its stream, Berth's own lines
/// as `system`. The controller stored them masked.
pub fn log_entry(stored: &TimelineEntry) -> ScheduledTaskRunLogEntry {
    let event = &stored.event;
    let stream = match (event.source, event.stream) {
        (Source::Application, Some(OutputStream::Stderr)) => TaskLogStream::Stderr,
        (Source::Application, _) => TaskLogStream::Stdout,
        (Source::Platform, _) => TaskLogStream::System,
    };
    ScheduledTaskRunLogEntry {
        timestamp: event.timestamp.clone(),
        stream,
        message: event.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_runs_asked_for_later_have_names_that_sort_later() {
        assert_eq!(sortable_base36(0), "000000000");
        assert_eq!(sortable_base36(35), "00000000z");
        assert!(sortable_base36(1_764_000_000_999) < sortable_base36(1_764_000_001_000));
        assert!(sortable_base36(9) < sortable_base36(10));
    }
    use berth_crds::deployment::{DeploymentPhase, DeploymentStep};
    use berth_crds::progress::{Level, ProgressEvent, StreamStatus};
    use berth_crds::scheduled_task::{
        ConcurrencyPolicy, NotRun, ScheduledTaskRunStatus, SkippedReason, TaskState,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn task() -> ScheduledTask {
        let spec: ScheduledTaskSpec = serde_json::from_value(json!({
            "resourceId": "res-web", "schedule": "*/5 * * * *", "timezone": "Europe/Berlin",
            "command": "php artisan schedule:run", "timeoutSeconds": 600, "retryLimit": 2,
        }))
        .unwrap();
        let mut task = ScheduledTask::new("tsk-1", spec);
        task.metadata.namespace = Some("org-a".into());
        task.metadata.uid = Some("uid-1".into());
        task
    }

    fn run_at(name: &str, second: i64) -> Arc<ScheduledTaskRun> {
        let mut run = manual_run(&task(), name);
        run.metadata.creation_timestamp = Some(Time(
            k8s_openapi::jiff::Timestamp::from_second(1_800_000_000 + second).unwrap(),
        ));
        Arc::new(run)
    }

    #[test]
    fn a_manual_run_copies_the_task_and_goes_with_it() {
        let run = manual_run(&task(), "tsk-1-m-abc");
        assert_eq!(run.spec.trigger_kind, TriggerKind::Manual);
        assert_eq!(run.spec.command, "php artisan schedule:run");
        assert_eq!((run.spec.timeout_seconds, run.spec.retry_limit), (600, 2));
        let labels = run.metadata.labels.clone().unwrap();
        assert_eq!(labels[TASK_LABEL], "tsk-1");
        assert_eq!(labels[RESOURCE_LABEL], "res-web");
        let owner = &run.metadata.owner_references.clone().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("ScheduledTask", "uid-1")
        );
        assert_eq!(owner.controller, Some(true));
        assert_eq!(run.metadata.namespace.as_deref(), Some("org-a"));
        assert_eq!(run_summary(&run).status, TaskRunStatus::Accepted);
    }

    #[test]
    fn a_keyed_name_repeats_and_an_unkeyed_one_does_not() {
        let t = task();
        assert_eq!(
            manual_run_name(&t, Some("k")),
            manual_run_name(&t, Some("k"))
        );
        assert_ne!(
            manual_run_name(&t, Some("k")),
            manual_run_name(&t, Some("j"))
        );
        assert!(manual_run_name(&t, None).starts_with("tsk-1-m-"));
        assert_eq!(task_name("org-a", Some("k")), task_name("org-a", Some("k")));
        assert_ne!(task_name("org-a", Some("k")), task_name("org-b", Some("k")));
        assert!(task_name("org-a", None).starts_with("tsk-"));
    }

    #[test]
    fn a_run_not_run_reads_as_recorded_until_the_controller_writes() {
        let mut run = manual_run(&task(), "tsk-1-1800000000");
        run.spec.trigger_kind = TriggerKind::Scheduled;
        run.spec.not_run = Some(NotRun {
            status: TaskRunStatus::Skipped,
            skipped_reason: Some(SkippedReason::ConcurrencyForbidden),
            summary: "another run still runs".into(),
        });
        let summary = run_summary(&run);
        assert_eq!(summary.status, TaskRunStatus::Skipped);
        assert_eq!(
            summary.skipped_reason,
            Some(SkippedReason::ConcurrencyForbidden)
        );
        assert_eq!(
            summary.failure_summary.as_deref(),
            Some("another run still runs")
        );
        run.status = Some(ScheduledTaskRunStatus {
            status: Some(TaskRunStatus::Failed),
            exit_code: Some(2),
            attempt: Some(3),
            ..Default::default()
        });
        let summary = run_summary(&run);
        assert_eq!(
            (summary.status, summary.exit_code, summary.attempt),
            (TaskRunStatus::Failed, Some(2), Some(3))
        );
    }

    #[test]
    fn a_tasks_latest_run_is_its_newest() {
        let mut other = (*run_at("tsk-2-m-z", 99)).clone();
        other.spec.task_id = "tsk-2".into();
        let runs = vec![
            run_at("tsk-1-m-a", 1),
            run_at("tsk-1-m-b", 5),
            Arc::new(other),
            run_at("tsk-1-m-c", 3),
        ];
        let summary = task_summary(&task(), &runs);
        assert_eq!(summary.latest_run.unwrap().run_id, "tsk-1-m-b");
        assert_eq!(summary.command_intent, "php artisan schedule:run");
        assert!(task_summary(&task(), &[]).latest_run.is_none());
        let mut sorted = runs.clone();
        sort_newest_first(&mut sorted);
        let names: Vec<String> = sorted.iter().map(|r| r.name_any()).collect();
        assert_eq!(names, ["tsk-2-m-z", "tsk-1-m-b", "tsk-1-m-c", "tsk-1-m-a"]);
    }

    #[test]
    fn a_configure_changes_only_what_it_names_and_checks_the_merged_schedule() {
        let spec = task().spec;
        let body = ConfigureScheduledTask {
            status: Some(TaskState::Disabled),
            concurrency_policy: Some(ConcurrencyPolicy::Allow),
            ..Default::default()
        };
        let next = configured(&spec, &body).unwrap();
        assert_eq!(next.state, TaskState::Disabled);
        assert_eq!(next.concurrency_policy, ConcurrencyPolicy::Allow);
        assert_eq!(
            (next.schedule.as_str(), next.timeout_seconds),
            ("*/5 * * * *", 600)
        );
        let zone = ConfigureScheduledTask {
            timezone: Some("Nowhere/Else".into()),
            ..Default::default()
        };
        assert_eq!(configured(&spec, &zone).unwrap_err().field, "timezone");
        let cron = ConfigureScheduledTask {
            schedule: Some("61 * * * *".into()),
            ..Default::default()
        };
        assert_eq!(configured(&spec, &cron).unwrap_err().field, "schedule");
    }

    #[test]
    fn log_lines_keep_their_stream_and_berths_own_are_system() {
        let line = |source, stream, message: &str| TimelineEntry {
            sequence: 1,
            event: ProgressEvent {
                timestamp: "2030-01-01T00:00:00.000Z".into(),
                source,
                phase: DeploymentPhase::Deploy,
                level: Level::Info,
                message: message.into(),
                deployment_id: "tsk-1-m-abc".into(),
                status: StreamStatus::Running,
                step: DeploymentStep {
                    current: 1,
                    total: 1,
                    label: "Run".into(),
                },
                stream,
            },
        };
        let out = log_entry(&line(Source::Application, Some(OutputStream::Stdout), "hi"));
        assert_eq!(
            (out.stream, out.message.as_str()),
            (TaskLogStream::Stdout, "hi")
        );
        let err = log_entry(&line(
            Source::Application,
            Some(OutputStream::Stderr),
            "oops",
        ));
        assert_eq!(err.stream, TaskLogStream::Stderr);
        let own = log_entry(&line(Source::Platform, None, "exit code 0"));
        assert_eq!(own.stream, TaskLogStream::System);
    }
}
