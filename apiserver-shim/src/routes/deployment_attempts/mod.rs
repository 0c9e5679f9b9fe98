//! Deployment attempts over REST, beyond the spec's §4 (Appaloft 1.10.5's routes and shapes):
//! list and count them, show one, read and follow its timeline, cancel, retry, roll back,
//! redeploy, and the proof that an attempt serves. An attempt is its Deployment object while it
//! exists and, after berth-controller removed it beyond the history limit, the last state the
//! attempt archive kept (`crate::attempt_archive`), so history reads the same either way.

mod actions;
mod list;
mod proof;
pub mod record;
mod show;
mod timeline;

use std::sync::Arc;

use axum::http::StatusCode;
use berth_api::common::{CountResponse, IdResponse};
use berth_api::deployment_records::{
    CancelDeployment, DeploymentCanceled, DeploymentList, DeploymentTimeline, RedeployResource,
    RetryDeployment, RollbackDeployment, ShowDeployment, TimelineEnvelope,
};
use berth_crds::deployment::Deployment;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use kube::ResourceExt;

use super::Endpoint;
use crate::attempt_archive;
use crate::auth::Caller;
use crate::domain::deployments::visible;
use crate::domain::objects::{find_deployment, find_in};
use crate::error::{ApiError, ApiResult};
use crate::observation_store::store_call;
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<DeploymentList, _, _>(
            "/deployments",
            "List deployment attempts, newest first, also those started by GitOps, auto-deploy \
             and configuration changes and those removed beyond a resource's history limit \
             (filters: resourceId, projectId, environmentId, serverId, status; limit 1..500, \
             default 50; cursor from nextCursor)",
            list::list,
        ),
        Endpoint::get::<CountResponse, _, _>(
            "/deployments/count",
            "Count deployment attempts (the filters of GET /deployments)",
            list::count,
        ),
        Endpoint::get::<ShowDeployment, _, _>(
            "/deployments/{deploymentId}",
            "One deployment attempt (deployments.show/v1): status, phase and step, error, \
             image, source commit, trigger, timestamps, related objects and what can be done \
             with it now",
            show::show,
        ),
        Endpoint::get::<DeploymentTimeline, _, _>(
            "/deployments/{deploymentId}/timeline",
            "An attempt's timeline (deployments.timeline/v1), oldest first: steps, build and \
             pull output, outcome (query: cursor or after, limit 1..500, default 100)",
            timeline::page,
        ),
        Endpoint::get::<TimelineEnvelope, _, _>(
            "/deployments/{deploymentId}/timeline/stream",
            "Follow an attempt's timeline as text/event-stream: every entry after `after` \
             (or the Last-Event-ID header; from the start without either), each event's id \
             its sequence, then a `closed` event once the attempt ended; a client that \
             reconnects with its last id misses no entry",
            timeline::stream,
        )
        .event_stream(),
        Endpoint::get::<berth_api::deployment_proof::DeploymentProof, _, _>(
            "/deployments/{deploymentId}/proof",
            "The evidence that an attempt serves (deployments.proof/v1): the health check it \
             passed, its verify timeline, the serving container, the route the edge proxy \
             holds, and for the serving attempt a Docker inspect and a request through the \
             edge proxy made now; verdict verified, partially-verified, unverified, stale or \
             failed",
            proof::proof,
        ),
        Endpoint::post::<CancelDeployment, DeploymentCanceled, _, _>(
            "/deployments/{deploymentId}/cancel",
            "Cancel a running attempt (`confirm` repeats its id): a running build or health \
             check stops at once and the serving container stays; answers once it stopped",
            actions::cancel,
        )
        .success(&[StatusCode::OK, StatusCode::ACCEPTED]),
        Endpoint::post::<RetryDeployment, IdResponse, _, _>(
            "/deployments/{deploymentId}/retry",
            "Run a failed or canceled attempt again as a new attempt with the same source and \
             commit (confirmation.deploymentId; 201 with the new id)",
            actions::retry,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::post::<RollbackDeployment, IdResponse, _, _>(
            "/deployments/{deploymentId}/rollback",
            "Serve an earlier succeeded attempt's image again, with no rebuild and no dropped \
             request (confirmation.deploymentId; rollbackCandidateDeploymentId, default the \
             newest succeeded attempt before this one; 201 with the new id)",
            actions::rollback,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::post::<RedeployResource, IdResponse, _, _>(
            "/resources/{resourceId}/redeploy",
            "Deploy a resource's current source again, or that of sourceDeploymentId \
             (confirmation.resourceId; 201 with the new attempt's id)",
            actions::redeploy,
        )
        .success(&[StatusCode::CREATED]),
    ]
}

/// An attempt the caller may see.
pub struct Attempt {
    pub deployment: Deployment,
    /// Its object is gone; this is the state the archive kept.
    pub removed: bool,
    /// Its resource, while it exists.
    pub resource: Option<Arc<Resource>>,
}

/// The resource an attempt belongs to; `None` when it is gone or is a newer resource of the
/// same name (created after the attempt), whose history this attempt is not.
pub fn resource_of(state: &AppState, deployment: &Deployment) -> Option<Arc<Resource>> {
    let namespace = deployment.namespace().unwrap_or_default();
    let resource = find_in(
        &state.caches.resources,
        &namespace,
        &deployment.spec.resource_id,
        "resource",
    )
    .ok()?;
    let created = |meta: &kube::api::ObjectMeta| meta.creation_timestamp.as_ref().map(|t| t.0);
    let newer = created(&resource.metadata) > created(&deployment.metadata);
    (!newer).then_some(resource)
}

/// Attempt `id` of the caller's organization (members and deploy tokens), live or archived;
/// 404 when it does not exist for the caller.
pub async fn find(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Attempt> {
    let namespace = caller
        .require_role(OrganizationRole::Member)?
        .namespace
        .clone();
    let not_found = || ApiError::not_found("deployment", id);
    // An id no object can have is not asked of the API server (which would refuse it).
    if !crate::domain::objects::object_name(id) {
        return Err(not_found());
    }
    if let Some(deployment) = find_deployment(state, &namespace, id).await? {
        if !visible(caller, &deployment) {
            return Err(not_found());
        }
        let resource = resource_of(state, &deployment);
        return Ok(Attempt {
            deployment,
            removed: false,
            resource,
        });
    }
    let (ns, name) = (namespace.clone(), id.to_string());
    let row = store_call(&state.observations, "deployment history", move |store| {
        store.attempt(&ns, &name)
    })
    .await?;
    let deployment = row
        .as_ref()
        .and_then(attempt_archive::object)
        .filter(|d| visible(caller, d))
        .ok_or_else(not_found)?;
    // The history of a resource deleted (or deleted and created again) is gone with it.
    let resource = resource_of(state, &deployment).ok_or_else(not_found)?;
    Ok(Attempt {
        deployment,
        removed: true,
        resource: Some(resource),
    })
}
