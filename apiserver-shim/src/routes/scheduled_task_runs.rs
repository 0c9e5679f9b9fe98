//! Runs of scheduled tasks over REST (Appaloft's routes and shapes): `GET
//! /scheduled-task-runs[/{runId}]`, newest first, and `GET /scheduled-task-runs/{runId}/logs`,
//! the lines the run's command printed and Berth's own lines about it, as berth-controller
//! stored them (masked) in the observation store.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_api::scheduled_tasks::{TaskRunStatus, TriggerKind};
use berth_crds::member::OrganizationRole;
use berth_crds::scheduled_task::ScheduledTaskRun;
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::objects::all_in;
use crate::domain::resource_access;
use crate::domain::scheduled_tasks::{
    log_entry, log_key, lookup_run, lookup_task, run_status, run_summary, sees_resource,
    sort_newest_first,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params, paginate};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;

pub use berth_api::scheduled_tasks::{
    PAGE_LIMIT_MAX, RUN_LOGS_SCHEMA, RUN_SHOW_SCHEMA, RUNS_LIST_SCHEMA, ScheduledTaskRunList,
    ScheduledTaskRunLogs, ScheduledTaskRunShow,
};

/// Log lines of one page unless `limit` says.
const LOG_LIMIT_DEFAULT: u64 = 100;
const LOG_LIMIT_MAX: u64 = berth_api::limits::LIST_LIMIT_MAX;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<ScheduledTaskRunList, _, _>(
            "/scheduled-task-runs",
            "List runs of scheduled tasks, newest first (taskId, resourceId, status, triggerKind \
             filters; limit, cursor)",
            list,
        ),
        Endpoint::get::<ScheduledTaskRunShow, _, _>(
            "/scheduled-task-runs/{runId}",
            "Show a run: status, exit code, times, why it failed or was skipped",
            show,
        ),
        Endpoint::get::<ScheduledTaskRunLogs, _, _>(
            "/scheduled-task-runs/{runId}/logs",
            "A run's output lines (stdout, stderr) and Berth's own lines about it (system), \
             oldest first (cursor, limit)",
            logs,
        ),
    ]
}

/// A query value as the API's enum, among `allowed` (its wire names).
fn wire_filter<T: DeserializeOwned>(
    query: &QueryParams,
    name: &str,
    allowed: &[&str],
) -> ApiResult<Option<T>> {
    query
        .one_of(name, allowed, None)?
        .map(|value| {
            serde_json::from_value(serde_json::Value::String(value.to_string()))
                .map_err(ApiError::internal)
        })
        .transpose()
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<ScheduledTaskRunList>> {
    known_params(
        &query,
        &[
            "taskId",
            "resourceId",
            "status",
            "triggerKind",
            "limit",
            "cursor",
        ],
    )?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let namespace = &organization.namespace;
    let limit = query.integer("limit", 1, PAGE_LIMIT_MAX, PAGE_LIMIT_MAX)? as usize;
    let cursor = query.string("cursor")?;
    let task = query.string("taskId")?;
    if let Some(task) = task {
        lookup_task(&state, &caller, task).map_err(|e| e.with_detail("field", "taskId"))?;
    }
    let resource = query.string("resourceId")?;
    if let Some(resource) = resource {
        resource_access::lookup(&state, &caller, resource)
            .map_err(|e| e.with_detail("field", "resourceId"))?;
    }
    let statuses = [
        "accepted",
        "running",
        "succeeded",
        "failed",
        "skipped",
        "missed",
    ];
    let status: Option<TaskRunStatus> = wire_filter(&query, "status", &statuses)?;
    let trigger: Option<TriggerKind> =
        wire_filter(&query, "triggerKind", &["manual", "scheduled"])?;
    let mut runs: Vec<Arc<ScheduledTaskRun>> = all_in(&state.caches.scheduled_task_runs, namespace)
        .into_iter()
        .filter(|r| task.is_none_or(|t| r.spec.task_id == t))
        .filter(|r| resource.is_none_or(|id| r.spec.resource_id == id))
        .filter(|r| status.is_none_or(|s| run_status(r) == s))
        .filter(|r| trigger.is_none_or(|k| r.spec.trigger_kind == k))
        .filter(|r| sees_resource(&state, &caller, namespace, &r.spec.resource_id))
        .collect();
    sort_newest_first(&mut runs);
    let (page, next_cursor) = paginate(&runs, cursor, limit)?;
    Ok(Json(ScheduledTaskRunList {
        schema_version: RUNS_LIST_SCHEMA.into(),
        items: page.iter().map(|r| run_summary(r)).collect(),
        next_cursor,
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ScheduledTaskRunShow>> {
    let run = lookup_run(&state, &caller, &id)?;
    Ok(Json(ScheduledTaskRunShow {
        schema_version: RUN_SHOW_SCHEMA.into(),
        run: run_summary(&run),
        generated_at: Timestamp::now().to_string(),
    }))
}

/// The lines after `cursor` (a sequence this endpoint returned). `nextCursor` is the last
/// line's, whenever there were lines: a client following a running run asks again with it
/// until a page comes back empty and the run has ended.
async fn logs(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<ScheduledTaskRunLogs>> {
    known_params(&query, &["cursor", "limit"])?;
    let after = query.integer("cursor", 0, i64::MAX as u64, 0)? as i64;
    let limit = query.integer("limit", 1, LOG_LIMIT_MAX, LOG_LIMIT_DEFAULT)? as usize;
    let run = lookup_run(&state, &caller, &id)?;
    let key = log_key(&run);
    let stored = store_call(
        &state.observations,
        "scheduled task run logs",
        move |store| store.read(&key, after, limit),
    )
    .await?;
    Ok(Json(ScheduledTaskRunLogs {
        schema_version: RUN_LOGS_SCHEMA.into(),
        run_id: id,
        task_id: run.spec.task_id.clone(),
        resource_id: run.spec.resource_id.clone(),
        entries: stored.iter().map(log_entry).collect(),
        next_cursor: stored.last().map(|e| e.sequence.to_string()),
        generated_at: Timestamp::now().to_string(),
    }))
}
