//! ScheduledTask: makes a ScheduledTaskRun for each slot of the task's schedule, and the run
//! controller (`run`) runs it. A scheduled run's object name is its task and slot, so a slot
//! made twice — a controller killed after creating it, a new leader after a failover — exists
//! once. Slots that passed while Berth could not run them are recorded `missed` (`slots`); an
//! idle task costs a timer until its next slot, no API request. The status says when the next
//! run is due and how the newest went.

pub(crate) mod container;
mod outcome;
mod run;

use std::sync::Arc;
use std::time::Duration;

use berth_crds::RESOURCE_LABEL;
use berth_crds::condition::reason::{DEPENDENCY_MISSING, INVALID_SPEC};
use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::scheduled_task::{
    ConcurrencyPolicy, LatestRun, NotRun, RUN_CONTAINER_FINALIZER, ScheduledTask, ScheduledTaskRun,
    ScheduledTaskRunSpec, ScheduledTaskStatus, SkippedReason, TASK_LABEL, TaskRunStatus,
    TriggerKind, scheduled_run_name,
};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt};

use self::outcome::REPLACED_BY_ANNOTATION;
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::policy::{drain, error_policy};
use crate::reconcilers::slots::{self, SlotDecision, SlotRecord, rfc3339, until};
use crate::status::StatusWriter;

pub use self::run::run as run_runs;

const KIND: &str = "ScheduledTask";
/// Ended runs kept per task, the newest; older ones are deleted (their logs stay in the
/// observation store until its retention removes them).
const RUNS_KEPT: usize = 50;
/// How soon a task whose resource does not exist is looked at again.
const WAIT_FOR_RESOURCE: Duration = Duration::from_secs(30);
/// Reason of `Ready=True`.
const SCHEDULED: &str = "Scheduled";

/// Runs the task controller on its own watch (and its runs', which it owns) until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let client = context.client.clone();
    let stream = Controller::new(
        Api::<ScheduledTask>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<ScheduledTaskRun>::all(client),
        watcher::Config::default(),
    )
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(task: Arc<ScheduledTask>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = task
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let tasks = Api::<ScheduledTask>::namespaced(context.client.clone(), &namespace);
    let runs = Api::<ScheduledTaskRun>::namespaced(context.client.clone(), &namespace);
    let now = Timestamp::now();
    let schedule = match task.spec.parsed_schedule() {
        Ok(schedule) => schedule,
        Err(problem) => {
            let message = format!("spec.{}: {}", problem.field, problem.message);
            write(&tasks, &task, not_ready(&task, INVALID_SPEC, message, now)).await?;
            return Ok(Action::await_change());
        }
    };
    let resource = &task.spec.resource_id;
    if Caches::get(&context.caches.resources, &namespace, resource).is_none() {
        let message = format!("spec.resourceId: resource {resource} does not exist");
        write(
            &tasks,
            &task,
            not_ready(&task, DEPENDENCY_MISSING, message, now),
        )
        .await?;
        return Ok(Action::requeue(WAIT_FOR_RESOURCE));
    }
    let status = task.status.as_ref();
    let record = SlotRecord {
        last_slot: status.and_then(|s| s.last_slot.as_deref()),
        same_spec: status.and_then(|s| s.observed_generation) == task.metadata.generation,
        created: task.metadata.creation_timestamp.as_ref().map(|t| t.0),
    };
    let handled = slots::handled_through(record, now);
    let decision = slots::decide(
        &schedule,
        task.spec.state == berth_crds::scheduled_task::TaskState::Enabled,
        task.spec.run_missed,
        handled,
        now.as_second(),
    );
    let mut existing = runs_of(&runs, &task).await?;
    let made = make_runs(&task, &context, &runs, &decision, &existing).await?;
    existing.extend(made);
    prune(&runs, &mut existing).await;
    let status = scheduled(&task, &decision, &existing, now);
    write(&tasks, &task, status).await?;
    Ok(match decision.next {
        Some(next) => Action::requeue(until(next, now)),
        None => Action::await_change(),
    })
}

async fn runs_of(
    runs: &Api<ScheduledTaskRun>,
    task: &ScheduledTask,
) -> Result<Vec<ScheduledTaskRun>> {
    let params = ListParams::default().labels(&format!("{TASK_LABEL}={}", task.name_any()));
    Ok(runs.list(&params).await?.items)
}

/// Creates the runs `decision` asks for: the missed slots' records, the late run, the due run
/// (skipped when another still runs and the policy forbids it; the other stopped when it says
/// replace). Returns what it created.
async fn make_runs(
    task: &ScheduledTask,
    context: &Context,
    runs: &Api<ScheduledTaskRun>,
    decision: &SlotDecision,
    existing: &[ScheduledTaskRun],
) -> Result<Vec<ScheduledTaskRun>> {
    let name = task.name_any();
    let mut made = Vec::new();
    for (index, slot) in decision.missed.iter().enumerate() {
        let mut summary = format!(
            "its slot {} passed while Berth could not run it (the controller was stopped or \
             had no leader)",
            rfc3339(*slot)
        );
        if index == 0 && decision.missed_uncounted > 0 {
            summary.push_str(&format!(
                "; {} earlier slots were missed too",
                decision.missed_uncounted
            ));
        }
        let not_run = NotRun {
            status: TaskRunStatus::Missed,
            skipped_reason: None,
            summary,
        };
        let run = new_run(
            task,
            scheduled_run_name(&name, *slot),
            Some(*slot),
            Some(not_run),
        );
        made.extend(create(runs, run).await?);
    }
    let due = [
        decision
            .run
            .map(|slot| (scheduled_run_name(&name, slot), slot)),
        decision
            .run_late
            .map(|slot| (scheduled_run_name(&format!("{name}-late"), slot), slot)),
    ];
    for (run_name, slot) in due.into_iter().flatten() {
        let active = active_runs(existing);
        let policy = task.spec.concurrency_policy;
        let not_run = match (policy, active.first()) {
            (ConcurrencyPolicy::Forbid, Some(running)) => Some(NotRun {
                status: TaskRunStatus::Skipped,
                skipped_reason: Some(SkippedReason::ConcurrencyForbidden),
                summary: outcome::skipped_summary(
                    SkippedReason::ConcurrencyForbidden,
                    &running.name_any(),
                ),
            }),
            _ => None,
        };
        let skipped = not_run.is_some();
        let created = create(runs, new_run(task, run_name.clone(), Some(slot), not_run)).await?;
        if policy == ConcurrencyPolicy::Replace && created.is_some() && !skipped {
            for older in active {
                replace(context, runs, older, &run_name).await?;
            }
        }
        made.extend(created);
    }
    Ok(made)
}

/// Runs of the task that still run (records made ended do not count).
fn active_runs(runs: &[ScheduledTaskRun]) -> Vec<&ScheduledTaskRun> {
    runs.iter()
        .filter(|run| run.spec.not_run.is_none() && !run.run_status().is_final())
        .collect()
}

/// Marks `older` as replaced by `newer`, then stops its container: its run records why.
async fn replace(
    context: &Context,
    runs: &Api<ScheduledTaskRun>,
    older: &ScheduledTaskRun,
    newer: &str,
) -> Result<()> {
    let patch = serde_json::json!({"metadata": {"annotations": {REPLACED_BY_ANNOTATION: newer}}});
    runs.patch(
        &older.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    let status = older.status.clone().unwrap_or_default();
    if let (Some(server), Some(name)) = (status.server_id, status.container) {
        let namespace = older.namespace().unwrap_or_default();
        let (_, target) = connect(context, &namespace, &server).await?;
        container::stop(&target, &name).await?;
    }
    Ok(())
}

/// A run of `task` for `slot`, owned by the task (deleting the task deletes its runs).
fn new_run(
    task: &ScheduledTask,
    name: String,
    slot: Option<i64>,
    not_run: Option<NotRun>,
) -> ScheduledTaskRun {
    let labels = [
        (TASK_LABEL.to_string(), task.name_any()),
        (RESOURCE_LABEL.to_string(), task.spec.resource_id.clone()),
    ];
    ScheduledTaskRun {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: task.namespace(),
            labels: Some(labels.into()),
            owner_references: task.controller_owner_ref(&()).map(|owner| vec![owner]),
            // A run made already ended (skipped, missed) never has a container.
            finalizers: not_run
                .is_none()
                .then(|| vec![RUN_CONTAINER_FINALIZER.to_string()]),
            ..Default::default()
        },
        spec: ScheduledTaskRunSpec {
            task_id: task.name_any(),
            resource_id: task.spec.resource_id.clone(),
            trigger_kind: TriggerKind::Scheduled,
            scheduled_for: slot.map(rfc3339),
            command: task.spec.command.clone(),
            timeout_seconds: task.spec.timeout_seconds,
            retry_limit: task.spec.retry_limit,
            not_run,
        },
        status: None,
    }
}

/// Creates `run` unless it exists (made already for its slot): what was created.
async fn create(
    runs: &Api<ScheduledTaskRun>,
    run: ScheduledTaskRun,
) -> Result<Option<ScheduledTaskRun>> {
    match runs.create(&PostParams::default(), &run).await {
        Ok(created) => Ok(Some(created)),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the oldest ended runs beyond [`RUNS_KEPT`]; a failure waits for the next slot.
async fn prune(runs: &Api<ScheduledTaskRun>, existing: &mut Vec<ScheduledTaskRun>) {
    existing.sort_by_key(creation_order);
    let ended: Vec<String> = existing
        .iter()
        .filter(|run| run.run_status().is_final())
        .map(ResourceExt::name_any)
        .collect();
    let excess = ended.len().saturating_sub(RUNS_KEPT);
    for name in &ended[..excess] {
        if let Err(error) = runs.delete(name, &DeleteParams::default()).await {
            tracing::warn!(%error, run = %name, "could not delete an old task run");
        }
    }
    existing.retain(|run| !ended[..excess].contains(&run.name_any()));
}

fn creation_order(run: &ScheduledTaskRun) -> (i64, String) {
    let created = run
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(i64::MAX, |t| t.0.as_millisecond());
    (created, run.name_any())
}

/// The status of a task whose schedule runs: next slot, last slot handled, newest run.
fn scheduled(
    task: &ScheduledTask,
    decision: &SlotDecision,
    runs: &[ScheduledTaskRun],
    now: Timestamp,
) -> ScheduledTaskStatus {
    let enabled = task.spec.state == berth_crds::scheduled_task::TaskState::Enabled;
    let latest = runs.iter().max_by_key(|run| creation_order(run));
    let message = match decision.next {
        Some(next) if enabled => format!("next run at {}", rfc3339(next)),
        Some(_) => "disabled: slots pass without a run".to_string(),
        None => "the schedule matches no future time".to_string(),
    };
    let mut status = with_ready(task, ConditionStatus::True, SCHEDULED, message, now);
    status.last_slot = Some(rfc3339(decision.handled_through));
    status.next_run_at = decision.next.filter(|_| enabled).map(rfc3339);
    status.latest_run = latest.map(|run| LatestRun {
        name: run.name_any(),
        status: run
            .status
            .as_ref()
            .and_then(|s| s.status)
            .or(run.spec.not_run.as_ref().map(|n| n.status))
            .unwrap_or(TaskRunStatus::Accepted),
    });
    status
}

fn not_ready(
    task: &ScheduledTask,
    reason: &str,
    message: String,
    now: Timestamp,
) -> ScheduledTaskStatus {
    // Slots before now are not missed once the task can run: nothing could run them.
    ScheduledTaskStatus {
        next_run_at: None,
        last_slot: Some(now.to_string()),
        ..with_ready(task, ConditionStatus::False, reason, message, now)
    }
}

fn with_ready(
    task: &ScheduledTask,
    ready: ConditionStatus,
    reason: &str,
    message: String,
    now: Timestamp,
) -> ScheduledTaskStatus {
    let mut status = task.status.clone().unwrap_or_default();
    let generation = task.metadata.generation;
    condition::merge(
        &mut status.conditions,
        Condition::new(READY, ready, reason, message, generation, now),
    );
    status.observed_generation = generation;
    status
}

async fn write(
    api: &Api<ScheduledTask>,
    task: &ScheduledTask,
    status: ScheduledTaskStatus,
) -> Result<()> {
    StatusWriter::new(api, task)
        .apply(task.status.as_ref(), &status)
        .await?;
    Ok(())
}
