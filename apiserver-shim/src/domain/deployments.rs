//! Deployment attempts as the routes start and show them: who may see one, its state, the
//! server it may run on, and the creation of a new one.

use berth_api::deployment_records::SourceCommit;
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::Resource;
use berth_crds::server::ServerLifecycle;
use kube::api::PostParams;
use kube::{Api, ResourceExt};

use crate::auth::{Caller, Principal, ScopeDimension};
use crate::domain::servers;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, FIELD_MANAGER};

/// The server exists for the caller, takes deployments, and is the one the resource names
/// (the controller removes a resource's containers from that server only).
pub fn check_server(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    server_id: &str,
) -> ApiResult<()> {
    let server = servers::lookup(state, caller, server_id).map_err(|_| {
        ApiError::validation(
            "serverId",
            format!("serverId: no server {server_id} in this organization"),
        )
    })?;
    if resource.spec.server_id.as_deref() != Some(server_id) {
        let named = resource.spec.server_id.as_deref().unwrap_or("none");
        return Err(ApiError::validation(
            "serverId",
            format!(
                "serverId: resource {} deploys to server {named}, not {server_id}",
                resource.name_any()
            ),
        ));
    }
    if server.spec.lifecycle_status != ServerLifecycle::Active {
        return Err(ApiError::conflict(format!(
            "server {server_id} is inactive and takes no deployments"
        ))
        .with_detail("field", "serverId"));
    }
    Ok(())
}

/// `dep-<resource>-m<3 random>`: short, because the controller names the container
/// `berth-<namespace>-<resource>-<deployment>` and the edge proxy dials it by that name through
/// Docker's DNS, where a label over 63 characters does not resolve; and starting with a letter,
/// so it sorts after the controller's `dep-<resource>-<generation>` when the controller breaks
/// a creation-time tie by name to pick the newest attempt.
pub fn deployment_name(resource: &str) -> String {
    let random = crate::token::new_id("x");
    format!("dep-{resource}-m{}", &random[random.len() - 3..])
}

/// Creates the attempt's Deployment; a name already taken (1 in 46656) gets another try.
pub async fn create_deployment(
    api: &Api<Deployment>,
    mut deployment: Deployment,
) -> ApiResult<Deployment> {
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let resource = deployment.spec.resource_id.clone();
    for _ in 0..3 {
        match api.create(&params, &deployment).await {
            Err(kube::Error::Api(status)) if status.code == 409 => {
                deployment.metadata.name = Some(deployment_name(&resource));
            }
            other => return Ok(other?),
        }
    }
    Err(ApiError::conflict(
        "could not pick a free deployment name; retry the request",
    ))
}

/// Whether a deploy token's scope covers the attempt's resource, project, environment and
/// server.
pub fn visible(caller: &Caller, deployment: &Deployment) -> bool {
    let spec = &deployment.spec;
    caller.sees(ScopeDimension::Resource, &spec.resource_id)
        && caller.sees(ScopeDimension::Project, &spec.project_id)
        && caller.sees(ScopeDimension::Environment, &spec.environment_id)
        && caller.sees(ScopeDimension::Target, &spec.server_id)
}

/// The commit an attempt built, as the wire spells it.
pub fn source_commit(deployment: &Deployment) -> Option<SourceCommit> {
    let commit = deployment.status.as_ref()?.source_commit.as_ref()?;
    Some(SourceCommit {
        repository: commit.repository.clone(),
        git_ref: commit.git_ref.clone(),
        sha: commit.sha.clone(),
        subject: commit.subject.clone(),
        author_name: commit.author_name.clone(),
        author_email: commit.author_email.clone(),
        authored_at: commit.authored_at.as_ref().map(timestamp),
    })
}

/// The attempt's status; `created` until the controller wrote one.
pub fn attempt_state(deployment: &Deployment) -> DeploymentState {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.status)
        .unwrap_or(DeploymentState::Created)
}

/// The archive's query of every removed attempt in `namespace` the caller may see (a deploy
/// token's scope); the routes narrow it further.
pub fn archive_within(namespace: &str, caller: &Caller) -> berth_observations::AttemptQuery {
    let scope = match &caller.principal {
        Principal::DeployToken { scope, .. } => Some(scope),
        Principal::User { .. } | Principal::Migration { .. } => None,
    };
    let within = |pick: fn(&berth_crds::deploy_token::DeployTokenScope) -> &Vec<String>| {
        scope.map(pick).cloned().unwrap_or_default()
    };
    berth_observations::AttemptQuery {
        namespace: namespace.into(),
        resource: None,
        project: None,
        environment: None,
        server: None,
        status: None,
        within_resources: within(|s| &s.resource_ids),
        within_projects: within(|s| &s.project_ids),
        within_environments: within(|s| &s.environment_ids),
        before: None,
        limit: 0,
    }
}
