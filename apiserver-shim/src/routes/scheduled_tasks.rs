//! Scheduled tasks over REST (Appaloft's routes and shapes): `POST /scheduled-tasks`, `GET
//! /scheduled-tasks[/{taskId}]`, `POST /scheduled-tasks/{taskId}` (configure), `DELETE
//! /scheduled-tasks/{taskId}` and `POST /scheduled-tasks/{taskId}/runs` (run now). A task is
//! a ScheduledTask object beside its resource (owned by it), a run a ScheduledTaskRun owned
//! by its task; berth-controller runs them. Reads come from the watch caches.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_crds::scheduled_task::{ScheduledTask, ScheduledTaskRun, TaskState};
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::cache::{catch_up, wait_deleted};
use crate::domain::objects::all_in;
use crate::domain::scheduled_tasks::{
    configured, lookup_task, manual_run, manual_run_name, new_task_spec, require_same_resource,
    run_summary, sees_resource, task_name, task_summary,
};
use crate::domain::{environments, projects, resource_access};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params, paginate};
use crate::json::Json;
use crate::state::AppState;
use crate::write::apply;

pub use berth_api::scheduled_tasks::{
    COMMAND_SCHEMA, ConfigureScheduledTask, CreateScheduledTask, DELETE_SCHEMA,
    DeleteScheduledTask, DeleteScheduledTaskResponse, LIST_SCHEMA, PAGE_LIMIT_MAX, RUN_NOW_SCHEMA,
    RunScheduledTaskNow, RunScheduledTaskNowResponse, SHOW_SCHEMA, ScheduledTaskCommandResponse,
    ScheduledTaskList, ScheduledTaskShow,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateScheduledTask, ScheduledTaskCommandResponse, _, _>(
            "/scheduled-tasks",
            "Create a scheduled task: a command run on a cron schedule in an IANA time zone in a \
             fresh container of a resource's image and configuration (201)",
            create,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::get::<ScheduledTaskList, _, _>(
            "/scheduled-tasks",
            "List scheduled tasks (projectId, environmentId, resourceId, status filters; limit, \
             cursor)",
            list,
        ),
        Endpoint::get::<ScheduledTaskShow, _, _>(
            "/scheduled-tasks/{taskId}",
            "Show a scheduled task, its next run and its latest run",
            show,
        ),
        Endpoint::post::<ConfigureScheduledTask, ScheduledTaskCommandResponse, _, _>(
            "/scheduled-tasks/{taskId}",
            "Configure a scheduled task: change the fields given",
            configure,
        ),
        Endpoint::delete::<DeleteScheduledTask, DeleteScheduledTaskResponse, _, _>(
            "/scheduled-tasks/{taskId}",
            "Delete a scheduled task and its runs",
            delete,
        ),
        Endpoint::post::<RunScheduledTaskNow, RunScheduledTaskNowResponse, _, _>(
            "/scheduled-tasks/{taskId}/runs",
            "Run a scheduled task's command now, whatever its schedule and status (202): the \
             run is accepted and berth-controller starts it",
            run_now,
        )
        .success(&[StatusCode::ACCEPTED]),
    ]
}

fn field(name: &'static str) -> impl Fn(ApiError) -> ApiError {
    move |error| error.with_detail("field", name)
}

fn api_of<K>(state: &AppState, namespace: &str) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(state.client.clone(), namespace)
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateScheduledTask>,
) -> ApiResult<(StatusCode, Json<ScheduledTaskCommandResponse>)> {
    let organization = caller.require_role(OrganizationRole::Member)?.clone();
    body.validate()?;
    let resource = resource_access::lookup_writable(&state, &caller, &body.resource_id)
        .map_err(field("resourceId"))?;
    let namespace = organization.namespace;
    let spec = new_task_spec(&body);
    let name = task_name(&namespace, body.idempotency_key.as_deref());
    let api = api_of::<ScheduledTask>(&state, &namespace);
    if body.idempotency_key.is_some()
        && let Some(existing) = api.get_opt(&name).await?
    {
        if existing.spec != spec {
            return Err(ApiError::conflict(
                "idempotencyKey was already used to create another scheduled task",
            )
            .with_detail("field", "idempotencyKey"));
        }
        return Ok((StatusCode::CREATED, command_response(&state, &existing)));
    }
    let mut task = ScheduledTask::new(&name, spec);
    // The task goes with its resource (and its runs with it).
    task.metadata.owner_references =
        kube::Resource::owner_ref(resource.as_ref(), &()).map(|o| vec![o]);
    let written = apply(&api, &state.caches.scheduled_tasks, Some(&caller), task).await?;
    tracing::info!(task = %name, resource = %body.resource_id, "scheduled task created");
    Ok((StatusCode::CREATED, command_response(&state, &written)))
}

fn runs_of(state: &AppState, namespace: &str) -> Vec<Arc<ScheduledTaskRun>> {
    all_in(&state.caches.scheduled_task_runs, namespace)
}

fn command_response(state: &AppState, task: &ScheduledTask) -> Json<ScheduledTaskCommandResponse> {
    let runs = runs_of(state, &task.namespace().unwrap_or_default());
    Json(ScheduledTaskCommandResponse {
        schema_version: COMMAND_SCHEMA.into(),
        task: task_summary(task, &runs),
    })
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<ScheduledTaskList>> {
    known_params(
        &query,
        &[
            "projectId",
            "environmentId",
            "resourceId",
            "status",
            "limit",
            "cursor",
        ],
    )?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let namespace = &organization.namespace;
    let limit = query.integer("limit", 1, PAGE_LIMIT_MAX, PAGE_LIMIT_MAX)? as usize;
    let cursor = query.string("cursor")?;
    // A filter must name a project, environment or resource the caller may use.
    let project = query.string("projectId")?;
    if let Some(project) = project {
        projects::lookup(&state, &caller, project)?;
    }
    let environment = query.string("environmentId")?;
    if let Some(environment) = environment {
        environments::lookup(&state, &caller, environment)?;
    }
    let resource = query.string("resourceId")?;
    if let Some(resource) = resource {
        resource_access::lookup(&state, &caller, resource)?;
    }
    let status = match query.one_of("status", &["enabled", "disabled"], None)? {
        Some("disabled") => Some(TaskState::Disabled),
        Some(_) => Some(TaskState::Enabled),
        None => None,
    };
    let resources: HashMap<String, Arc<Resource>> = all_in(&state.caches.resources, namespace)
        .into_iter()
        .map(|r| (r.name_any(), r))
        .collect();
    let placed = |task: &ScheduledTask| {
        let found = resources.get(&task.spec.resource_id);
        project.is_none_or(|p| found.is_some_and(|r| r.spec.project_id == p))
            && environment.is_none_or(|e| found.is_some_and(|r| r.spec.environment_id == e))
    };
    let mut tasks: Vec<Arc<ScheduledTask>> = all_in(&state.caches.scheduled_tasks, namespace)
        .into_iter()
        .filter(|t| t.metadata.deletion_timestamp.is_none())
        .filter(|t| resource.is_none_or(|r| t.spec.resource_id == r))
        .filter(|t| status.is_none_or(|s| t.spec.state == s))
        .filter(|t| placed(t))
        .filter(|t| sees_resource(&state, &caller, namespace, &t.spec.resource_id))
        .collect();
    tasks.sort_by_key(|t| {
        (
            t.metadata.creation_timestamp.clone().map(|t| t.0),
            t.name_any(),
        )
    });
    let (page, next_cursor) = paginate(&tasks, cursor, limit)?;
    let runs = runs_of(&state, namespace);
    Ok(Json(ScheduledTaskList {
        schema_version: LIST_SCHEMA.into(),
        items: page.iter().map(|t| task_summary(t, &runs)).collect(),
        next_cursor,
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ScheduledTaskShow>> {
    let task = lookup_task(&state, &caller, &id)?;
    let runs = runs_of(&state, &task.namespace().unwrap_or_default());
    Ok(Json(ScheduledTaskShow {
        schema_version: SHOW_SCHEMA.into(),
        task: task_summary(&task, &runs),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn configure(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ConfigureScheduledTask>,
) -> ApiResult<Json<ScheduledTaskCommandResponse>> {
    let task = lookup_task(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Member)?;
    require_same_resource(&task, body.resource_id.as_ref())?;
    let spec = configured(&task.spec, &body)?;
    let mut changed = ScheduledTask::new(&id, spec);
    // The same owner as before: an apply without it would drop it.
    changed.metadata.owner_references = task.metadata.owner_references.clone();
    let namespace = task.namespace().unwrap_or_default();
    let api = api_of::<ScheduledTask>(&state, &namespace);
    let written = apply(&api, &state.caches.scheduled_tasks, Some(&caller), changed).await?;
    tracing::info!(task = %id, "scheduled task configured");
    Ok(command_response(&state, &written))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteScheduledTask>,
) -> ApiResult<Json<DeleteScheduledTaskResponse>> {
    body.validate()?;
    let task = lookup_task(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Member)?;
    require_same_resource(&task, body.resource_id.as_ref())?;
    let namespace = task.namespace().unwrap_or_default();
    let api = api_of::<ScheduledTask>(&state, &namespace);
    // Background propagation: the API answers at once and the garbage collector removes the
    // runs the task owns.
    let marked =
        crate::write::delete(&api, task.as_ref(), &DeleteParams::background(), &caller).await?;
    wait_deleted(&state.caches.scheduled_tasks, task.as_ref(), marked).await?;
    tracing::info!(task = %id, "scheduled task deleted");
    Ok(Json(DeleteScheduledTaskResponse {
        schema_version: DELETE_SCHEMA.into(),
        task_id: id,
        resource_id: task.spec.resource_id.clone(),
        status: "deleted".into(),
        deleted_at: Timestamp::now().to_string(),
    }))
}

async fn run_now(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RunScheduledTaskNow>,
) -> ApiResult<(StatusCode, Json<RunScheduledTaskNowResponse>)> {
    body.validate()?;
    let task = lookup_task(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Member)?;
    require_same_resource(&task, body.resource_id.as_ref())?;
    // Its resource gives the run its image and configuration.
    resource_access::lookup(&state, &caller, &task.spec.resource_id)
        .map_err(field("resourceId"))?;
    let name = manual_run_name(&task, body.idempotency_key.as_deref());
    let namespace = task.namespace().unwrap_or_default();
    let api = api_of::<ScheduledTaskRun>(&state, &namespace);
    let mut run = manual_run(&task, &name);
    let (kind, actor) = caller.actor();
    run.annotations_mut().extend([
        (UPDATED_BY_KIND.to_string(), kind.to_string()),
        (UPDATED_BY_ID.to_string(), actor.to_string()),
    ]);
    let run = match api.create(&PostParams::default(), &run).await {
        Ok(created) => {
            tracing::info!(task = %id, run = %name, "scheduled task run asked for");
            created
        }
        // The same idempotency key again: the run the first request made.
        Err(kube::Error::Api(e)) if e.code == 409 && body.idempotency_key.is_some() => {
            api.get(&name).await?
        }
        Err(e) => return Err(e.into()),
    };
    catch_up(&state.caches.scheduled_task_runs, &run).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(RunScheduledTaskNowResponse {
            schema_version: RUN_NOW_SCHEMA.into(),
            run: run_summary(&run),
        }),
    ))
}
