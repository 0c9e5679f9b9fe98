//! Runtime control (spec §2.2 `latestRuntimeControl`): `POST /resources/{resourceId}/
//! runtime-control` with `operation` `stop`, `start` or `restart`, named like the other resource
//! actions (`auto-deploy` with its `mode`). The shim only writes the wish into the Resource's
//! `spec.runtime`, the field GitOps users set by hand; the controller carries it out and
//! records the attempt in the status. The answer is 202 with the attempt as accepted.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_crds::health::{RuntimeControlBlock, runtime_control_block};
use berth_crds::resource::Resource;
use berth_crds::runtime_control::{
    DesiredRuntimeState, RuntimeControlAttempt, RuntimeControlSpec, RuntimeOperation, attempt_id,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::super::Endpoint;
use super::profiles::for_write;
use super::save;
use crate::auth::Caller;
use crate::domain::objects::find_in;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::runtime_control::RuntimeControlRequest;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<RuntimeControlRequest, RuntimeControlBlock, _, _>(
            "/resources/{resourceId}/runtime-control",
            "Stop, start or restart the resource's runtime (operation: stop|start|restart); \
         answers 202 with the accepted attempt. Sets spec.runtime, which GitOps users may set \
         directly; refused (409 resource_archived) when its project or environment is archived",
            control,
        )
        .success(&[StatusCode::ACCEPTED]),
    ]
}

/// The allowed `operation` values, for the 422 answer.
const OPERATIONS: [&str; 3] = ["stop", "start", "restart"];

fn parse_operation(text: &str) -> ApiResult<RuntimeOperation> {
    RuntimeOperation::parse(text).ok_or_else(|| {
        ApiError::validation(
            "operation",
            "operation must be one of: stop, start, restart",
        )
        .with_detail("allowed", OPERATIONS.to_vec())
    })
}

/// The new `spec.runtime` for `operation`. A restart also asks for the runtime to run: a
/// stopped resource restarted through the API starts.
fn wish_after(
    current: RuntimeControlSpec,
    operation: RuntimeOperation,
    now: Timestamp,
) -> RuntimeControlSpec {
    match operation {
        RuntimeOperation::Stop => RuntimeControlSpec {
            desired_state: DesiredRuntimeState::Stopped,
            ..current
        },
        RuntimeOperation::Start => RuntimeControlSpec {
            desired_state: DesiredRuntimeState::Running,
            ..current
        },
        RuntimeOperation::Restart => RuntimeControlSpec {
            desired_state: DesiredRuntimeState::Running,
            restart_requested_at: Some(now.to_string()),
        },
    }
}

/// Refuses runtime control while the resource's project or environment is archived.
fn require_active(state: &AppState, resource: &Resource) -> ApiResult<()> {
    let namespace = resource.namespace().unwrap_or_default();
    let spec = &resource.spec;
    let environment = find_in(
        &state.caches.environments,
        &namespace,
        &spec.environment_id,
        "environment",
    );
    let project = find_in(
        &state.caches.projects,
        &namespace,
        &spec.project_id,
        "project",
    );
    let archived =
        environment.is_ok_and(|e| e.spec.archived) || project.is_ok_and(|p| p.spec.archived);
    if archived {
        return Err(ApiError::resource_archived(format!(
            "resource {} belongs to an archived project or environment: its runtime cannot be \
             stopped, started or restarted",
            resource.name_any()
        )));
    }
    Ok(())
}

async fn control(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RuntimeControlRequest>,
) -> ApiResult<(StatusCode, Json<RuntimeControlBlock>)> {
    let operation = parse_operation(&body.operation)?;
    let resource = for_write(&state, &caller, &id)?;
    require_active(&state, &resource)?;
    let now = Timestamp::now();
    let wish = wish_after(resource.spec.runtime_wish(), operation, now);
    let written = if resource.spec.runtime.as_ref() == Some(&wish) {
        resource.as_ref().clone()
    } else {
        let mut spec = resource.spec.clone();
        spec.runtime = Some(wish.clone());
        save(&state, &caller, &resource, spec).await?
    };
    Ok((
        StatusCode::ACCEPTED,
        Json(answer(&written, operation, &wish, now)),
    ))
}

/// The attempt the write asks for; a repeat that changed nothing (a stop of a stopped
/// resource) answers the attempt the status already records for that generation.
fn answer(
    written: &Resource,
    operation: RuntimeOperation,
    wish: &RuntimeControlSpec,
    now: Timestamp,
) -> RuntimeControlBlock {
    let id = attempt_id(
        &written.name_any(),
        written.metadata.generation.unwrap_or(0),
    );
    let recorded = written
        .status
        .as_ref()
        .and_then(|s| s.runtime_control.as_ref())
        .map(|c| &c.latest)
        .filter(|latest| latest.runtime_control_attempt_id == id);
    match recorded {
        Some(latest) => runtime_control_block(latest),
        None => runtime_control_block(&RuntimeControlAttempt::accepted(
            id,
            operation,
            wish,
            Time(now),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_operation_is_a_422_naming_the_field() {
        let error = parse_operation("pause").unwrap_err();
        assert_eq!(error.status, 422);
        assert_eq!(error.body.details["field"], "operation");
        assert_eq!(
            parse_operation("restart").unwrap(),
            RuntimeOperation::Restart
        );
    }

    #[test]
    fn each_operation_sets_the_wish() {
        let now: Timestamp = "2026-11-23T10:00:00Z".parse().unwrap();
        let stopped = wish_after(Default::default(), RuntimeOperation::Stop, now);
        assert_eq!(stopped.desired_state, DesiredRuntimeState::Stopped);
        assert_eq!(stopped.restart_requested_at, None);
        let started = wish_after(stopped.clone(), RuntimeOperation::Start, now);
        assert_eq!(started.desired_state, DesiredRuntimeState::Running);
        let restarted = wish_after(stopped, RuntimeOperation::Restart, now);
        assert_eq!(restarted.desired_state, DesiredRuntimeState::Running);
        assert_eq!(
            restarted.restart_requested_at.as_deref(),
            Some("2026-11-23T10:00:00Z")
        );
    }

    #[test]
    fn the_answer_is_the_accepted_attempt_with_pending_phases() {
        let mut resource: Resource = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "res-1", "generation": 5},
            "spec": {"projectId": "p", "environmentId": "e", "name": "Web", "kind": "application"},
        }))
        .unwrap();
        let now: Timestamp = "2026-11-23T10:00:00Z".parse().unwrap();
        let wish = wish_after(Default::default(), RuntimeOperation::Stop, now);
        resource.spec.runtime = Some(wish.clone());
        let body =
            serde_json::to_value(answer(&resource, RuntimeOperation::Stop, &wish, now)).unwrap();
        assert_eq!(body["runtimeControlAttemptId"], "rtc-res-1-5");
        assert_eq!(body["status"], "accepted");
        assert_eq!(body["runtimeState"], "stopping");
        assert_eq!(body["startedAt"], "2026-11-23T10:00:00Z");
        assert_eq!(body["phases"].as_array().unwrap().len(), 3);
    }
}
