//! What a client can do with an attempt: cancel it, run a failed one again, roll back to an
//! earlier succeeded attempt's image, or redeploy a resource. Each writes a Deployment (a
//! cancel request, or a new attempt with its trigger and lineage) that berth-controller runs;
//! the ones that change what serves take a confirmation repeating the target's id.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_api::common::{Confirmation, IdResponse};
use berth_api::deployment_records::{
    CancelDeployment, DeploymentCanceled, RedeployResource, RetryDeployment, RollbackDeployment,
    TriggerKind,
};
use berth_crds::deployment::{Deployment, DeploymentState, RollbackTarget};
use berth_crds::resource::Resource;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};

use super::{Attempt, find};
use crate::attempt_archive;
use crate::auth::Caller;
use crate::domain::deployments::{
    attempt_state, check_server, create_deployment, deployment_name, visible,
};
use crate::domain::fields::confirm;
use crate::domain::objects::all_in;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::{AppState, FIELD_MANAGER};

/// How long cancel waits for the controller to stop the attempt.
const CANCEL_WAIT: Duration = Duration::from_secs(30);

/// The confirmation of a call that changes what serves.
fn confirmed(
    given: Option<&Confirmation>,
    field: &str,
    expected: &str,
    kind: &str,
) -> ApiResult<()> {
    let value = given.and_then(|c| match field {
        "deploymentId" => c.deployment_id.as_deref(),
        _ => c.resource_id.as_deref(),
    });
    confirm(value, expected, field, kind)
}

/// An optional `resourceId` of the body must name the attempt's resource.
fn same_resource(given: Option<&String>, attempt: &Attempt) -> ApiResult<()> {
    match given {
        Some(id) if *id != attempt.deployment.spec.resource_id => Err(ApiError::validation(
            "resourceId",
            format!(
                "resourceId: deployment {} is of resource {}",
                attempt.deployment.name_any(),
                attempt.deployment.spec.resource_id
            ),
        )),
        _ => Ok(()),
    }
}

/// The resource a new attempt deploys: it exists, is not being deleted, and its server takes
/// deployments.
fn deployable(
    state: &AppState,
    caller: &Caller,
    resource: Option<&Arc<Resource>>,
    id: &str,
) -> ApiResult<Resource> {
    let resource = resource
        .filter(|r| r.metadata.deletion_timestamp.is_none())
        .ok_or_else(|| {
            ApiError::conflict_code(
                "resource_not_found",
                format!("resource {id} no longer exists; its attempts cannot run again"),
            )
        })?;
    crate::domain::resource_access::require_writable(state, resource)?;
    let server = resource.spec.server_id.clone().unwrap_or_default();
    check_server(state, caller, resource, &server)?;
    Ok(Resource::clone(resource))
}

/// A new attempt of `resource` started by `trigger` on behalf of the caller, from `source`'s
/// snapshot (its commit pinned when it fetched one) when given.
fn new_attempt(
    caller: &Caller,
    resource: &Resource,
    trigger: TriggerKind,
    source: Option<&Deployment>,
) -> Deployment {
    let mut deployment = Deployment::of_resource(
        &deployment_name(&resource.name_any()),
        resource,
        resource.spec.server_id.clone().unwrap_or_default(),
        resource.spec.destination_id.clone(),
        trigger.as_str(),
    );
    if let Some(source) = source {
        let mut snapshot = source.spec.source_snapshot.clone();
        let fetched = source
            .status
            .as_ref()
            .and_then(|s| s.source_commit.as_ref());
        if let (Some(snapshot), Some(commit)) = (snapshot.as_mut(), fetched) {
            snapshot.commit_sha = Some(commit.sha.clone());
        }
        deployment.spec.source_snapshot = snapshot;
        deployment.spec.variables = source.spec.variables.clone();
    }
    let (kind, actor) = caller.actor();
    let annotations = deployment.metadata.annotations.get_or_insert_default();
    annotations.insert(UPDATED_BY_KIND.to_string(), kind.to_string());
    annotations.insert(UPDATED_BY_ID.to_string(), actor.to_string());
    deployment
}

async fn start(
    state: &AppState,
    caller: &Caller,
    deployment: Deployment,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let namespace = caller.organization()?.namespace.clone();
    let api = Api::<Deployment>::namespaced(state.client.clone(), &namespace);
    let created = create_deployment(&api, deployment).await?;
    tracing::info!(
        deployment = %created.name_any(),
        trigger = ?created.spec.trigger,
        "deployment started"
    );
    Ok((
        StatusCode::CREATED,
        Json(IdResponse {
            id: created.name_any(),
        }),
    ))
}

pub async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<CancelDeployment>,
) -> ApiResult<(StatusCode, Json<DeploymentCanceled>)> {
    let attempt = find(&state, &caller, &id).await?;
    same_resource(body.resource_id.as_ref(), &attempt)?;
    match body.confirm.as_deref() {
        None => {
            return Err(ApiError::validation(
                "confirm",
                "confirm is required: repeat the deployment id to cancel it",
            ));
        }
        Some(given) if given != id => {
            return Err(ApiError::conflict_code(
                "confirmation_mismatch",
                "confirm must repeat the deployment id being canceled",
            )
            .with_detail("field", "confirm"));
        }
        Some(_) => {}
    }
    let current = attempt_state(&attempt.deployment);
    if let Some(done) = ended(&attempt.deployment, &id)? {
        return Ok((StatusCode::OK, Json(done)));
    }
    if attempt.removed || current.is_terminal() {
        return Err(not_active(&id, current));
    }
    let namespace = attempt.deployment.namespace().unwrap_or_default();
    let api = Api::<Deployment>::namespaced(state.client.clone(), &namespace);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let patch = serde_json::json!({ "spec": { "cancelRequested": true } });
    api.patch(&id, &params, &Patch::Merge(&patch)).await?;
    tracing::info!(deployment = %id, "cancel requested");
    let stopped = wait_until_ended(&state, &namespace, &id).await;
    match stopped {
        Some(deployment) => match ended(&deployment, &id)? {
            Some(done) => Ok((StatusCode::OK, Json(done))),
            None => Err(not_active(&id, attempt_state(&deployment))),
        },
        // Still stopping: accepted; the attempt's status says when it is done.
        None => Ok((
            StatusCode::ACCEPTED,
            Json(DeploymentCanceled {
                id,
                status: DeploymentState::CancelRequested,
                canceled_at: Timestamp::now().to_string(),
            }),
        )),
    }
}

/// The answer for an attempt that ended canceled; `None` while it runs.
fn ended(deployment: &Deployment, id: &str) -> ApiResult<Option<DeploymentCanceled>> {
    let status = deployment.status.clone().unwrap_or_default();
    if status.status != Some(DeploymentState::Canceled) {
        return Ok(None);
    }
    Ok(Some(DeploymentCanceled {
        id: id.to_string(),
        status: DeploymentState::Canceled,
        canceled_at: status
            .finished_at
            .as_ref()
            .map(timestamp)
            .unwrap_or_else(|| Timestamp::now().to_string()),
    }))
}

fn not_active(id: &str, current: DeploymentState) -> ApiError {
    let word = serde_json::to_value(current)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    ApiError::conflict_code(
        "deployment_not_active",
        format!("deployment {id} already ended {word}; only a running attempt can be canceled"),
    )
    .with_detail("status", word)
}

/// The attempt once the cache shows it ended, or `None` after [`CANCEL_WAIT`].
async fn wait_until_ended(state: &AppState, namespace: &str, id: &str) -> Option<Deployment> {
    let key = ObjectRef::new(id).within(namespace);
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    while tokio::time::Instant::now() < deadline {
        if let Some(cached) = state.caches.deployments.get(&key)
            && attempt_state(&cached).is_terminal()
        {
            return Some(Deployment::clone(&cached));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

pub async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RetryDeployment>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let attempt = find(&state, &caller, &id).await?;
    same_resource(body.resource_id.as_ref(), &attempt)?;
    body.validate()?;
    confirmed(
        body.confirmation.as_ref(),
        "deploymentId",
        &id,
        "deployment",
    )?;
    let current = attempt_state(&attempt.deployment);
    if !current.is_terminal() || current == DeploymentState::Succeeded {
        let word = serde_json::to_value(current).unwrap_or_default();
        return Err(ApiError::conflict_code(
            "deployment_not_retryable",
            format!("deployment {id} is {word}: only a failed, canceled or rolled-back attempt can be retried"),
        )
        .with_detail("status", word));
    }
    let resource = deployable(
        &state,
        &caller,
        attempt.resource.as_ref(),
        &attempt.deployment.spec.resource_id,
    )?;
    let mut deployment = new_attempt(
        &caller,
        &resource,
        TriggerKind::Retry,
        Some(&attempt.deployment),
    );
    deployment.spec.source_deployment_id = Some(id);
    // Retrying a rollback rolls back again.
    deployment.spec.rollback_of = attempt.deployment.spec.rollback_of.clone();
    start(&state, &caller, deployment).await
}

/// Succeeded attempts of the resource with an image, created before `before`, newest first:
/// live ones and those the archive kept.
pub async fn rollback_candidates(
    state: &AppState,
    caller: &Caller,
    before: &Deployment,
) -> ApiResult<Vec<Deployment>> {
    let namespace = before.namespace().unwrap_or_default();
    let resource = before.spec.resource_id.clone();
    let created = |d: &Deployment| d.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let mut candidates: Vec<Deployment> = all_in(&state.caches.deployments, &namespace)
        .into_iter()
        .filter(|d| d.spec.resource_id == resource)
        .map(|d| Deployment::clone(&d))
        .collect();
    let query = berth_observations::AttemptQuery {
        namespace: namespace.clone(),
        resource: Some(resource),
        status: Some("succeeded".into()),
        limit: 100,
        ..Default::default()
    };
    let rows = store_call(&state.observations, "deployment history", move |store| {
        store.removed_attempts(&query)
    })
    .await?;
    let live: std::collections::HashSet<String> = candidates.iter().map(|d| d.name_any()).collect();
    candidates.extend(
        rows.iter()
            .filter_map(attempt_archive::object)
            .filter(|d| !live.contains(&d.name_any())),
    );
    let mut candidates: Vec<Deployment> = candidates
        .into_iter()
        .filter(|d| d.name_any() != before.name_any())
        .filter(|d| attempt_state(d) == DeploymentState::Succeeded && image_of(d).is_some())
        .filter(|d| (created(d), d.name_any()) < (created(before), before.name_any()))
        .filter(|d| visible(caller, d))
        .collect();
    candidates.sort_by_key(|d| std::cmp::Reverse((created(d), d.name_any())));
    Ok(candidates)
}

fn image_of(deployment: &Deployment) -> Option<String> {
    deployment.status.as_ref().and_then(|s| s.image_ref.clone())
}

pub async fn rollback(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RollbackDeployment>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let attempt = find(&state, &caller, &id).await?;
    same_resource(body.resource_id.as_ref(), &attempt)?;
    body.validate()?;
    confirmed(
        body.confirmation.as_ref(),
        "deploymentId",
        &id,
        "deployment",
    )?;
    let candidates = rollback_candidates(&state, &caller, &attempt.deployment).await?;
    let candidate = match &body.rollback_candidate_deployment_id {
        Some(wanted) => candidates.into_iter().find(|d| d.name_any() == *wanted).ok_or_else(|| {
            ApiError::conflict_code(
                "rollback_candidate_invalid",
                format!(
                    "deployment {wanted} is not a succeeded attempt of resource {} from before {id} with an image",
                    attempt.deployment.spec.resource_id
                ),
            )
            .with_detail("field", "rollbackCandidateDeploymentId")
        })?,
        None => candidates.into_iter().next().ok_or_else(|| {
            ApiError::conflict_code(
                "rollback_candidate_missing",
                format!("no succeeded attempt with an image before {id} to roll back to"),
            )
        })?,
    };
    let resource = deployable(
        &state,
        &caller,
        attempt.resource.as_ref(),
        &attempt.deployment.spec.resource_id,
    )?;
    let mut deployment = new_attempt(&caller, &resource, TriggerKind::Rollback, Some(&candidate));
    deployment.spec.rollback_of = Some(RollbackTarget {
        deployment_id: candidate.name_any(),
        image_ref: image_of(&candidate).unwrap_or_default(),
    });
    start(&state, &caller, deployment).await
}

pub async fn redeploy(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RedeployResource>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let resource = crate::domain::resource_access::lookup(&state, &caller, &id)?;
    body.validate()?;
    let spec = &resource.spec;
    for (field, given, actual) in [
        ("projectId", &body.project_id, Some(&spec.project_id)),
        (
            "environmentId",
            &body.environment_id,
            Some(&spec.environment_id),
        ),
        ("serverId", &body.server_id, spec.server_id.as_ref()),
        (
            "destinationId",
            &body.destination_id,
            spec.destination_id.as_ref(),
        ),
    ] {
        if given.is_some() && given.as_ref() != actual {
            return Err(ApiError::validation(
                field,
                format!(
                    "{field}: resource {id} is not deployed with {}",
                    given.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    confirmed(body.confirmation.as_ref(), "resourceId", &id, "resource")?;
    if spec.source.is_none() {
        return Err(ApiError::conflict_code(
            "source_missing",
            format!(
                "resource {id} has no source to deploy; bind one with POST /resources/{id}/source"
            ),
        ));
    }
    let source = match &body.source_deployment_id {
        Some(source) => {
            let attempt = find(&state, &caller, source)
                .await
                .map_err(|e| e.with_detail("field", "sourceDeploymentId"))?;
            if attempt.deployment.spec.resource_id != id {
                return Err(ApiError::validation(
                    "sourceDeploymentId",
                    format!("sourceDeploymentId: deployment {source} is not of resource {id}"),
                ));
            }
            Some(attempt.deployment)
        }
        None => None,
    };
    let resource = deployable(&state, &caller, Some(&resource), &id)?;
    let mut deployment = new_attempt(&caller, &resource, TriggerKind::Redeploy, source.as_ref());
    deployment.spec.source_deployment_id = body.source_deployment_id.clone();
    start(&state, &caller, deployment).await
}
