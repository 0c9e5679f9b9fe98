//! Servers as the routes reach them: the caller's scoped lookup, who may change one, spec
//! writes, what blocks a delete, and the shared SSH connection.

use std::sync::Arc;

use berth_api::servers::Blocker;
use berth_crds::deployment::Deployment;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource as BerthResource;
use berth_crds::server::Server;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use berth_remote::ServerConnection;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::auth::{Caller, CallerOrganization, ScopeDimension};
use crate::cache::catch_up;
use crate::domain::objects::find_in;
use crate::error::{ApiError, ApiResult};
use crate::services::server_access::AccessLease;
use crate::state::{AppState, FIELD_MANAGER};

/// The server's shared SSH connection (runtime logs, probes, capacity) and a lease that keeps
/// it open: [`ServerAccess::connect`](crate::services::server_access::ServerAccess::connect)
/// logged in with this process's client and cached credentials.
pub async fn server_connection(
    state: &AppState,
    server: &Server,
    action: &str,
) -> Result<(Arc<ServerConnection>, AccessLease), ApiError> {
    let credentials = &state.caches.ssh_credentials;
    state
        .server_access
        .connect(&state.client, credentials, server, action)
        .await
}

/// A server of the caller's organization that the caller may see (a deploy token only its
/// deployment targets), or 404. Servers being deleted are gone already.
pub fn lookup(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<Server>> {
    let organization = caller.organization()?;
    let server = find_in(&state.caches.servers, &organization.namespace, id, "server")?;
    if server.metadata.deletion_timestamp.is_some() || !caller.sees(ScopeDimension::Target, id) {
        return Err(ApiError::not_found("server", id));
    }
    Ok(server)
}

/// Who may change servers: a signed-in user with the administrator role (no deploy token).
pub fn writer(caller: &Caller) -> ApiResult<&CallerOrganization> {
    caller.require_user()?;
    caller.require_role(OrganizationRole::Admin)
}

/// Writes the spec fields of `spec` alone (a merge patch) on behalf of an administrator,
/// noting who changed it; returns the stored server once the cache has it.
pub async fn merge_spec(
    state: &AppState,
    caller: &Caller,
    id: &str,
    spec: serde_json::Value,
) -> ApiResult<Server> {
    let organization = writer(caller)?;
    let (kind, actor) = caller.actor();
    let patch = json!({
        "metadata": { "annotations": { UPDATED_BY_KIND: kind, UPDATED_BY_ID: actor } },
        "spec": spec,
    });
    let api = Api::<Server>::namespaced(state.client.clone(), &organization.namespace);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let written = api.patch(id, &params, &Patch::Merge(&patch)).await?;
    catch_up(&state.caches.servers, &written).await?;
    Ok(written)
}

/// Delete-safety blockers: resources and deployments naming the server right now, plus what
/// the controller last reported about other kinds. Its resource and deployment entries are
/// left out: the live lists are the truth and the status lags a deletion by one recheck.
pub async fn current_blockers(state: &AppState, server: &Server) -> ApiResult<Vec<Blocker>> {
    let namespace = server.namespace().unwrap_or_default();
    let name = server.name_any();
    let resources = Api::<BerthResource>::namespaced(state.client.clone(), &namespace)
        .list(&ListParams::default())
        .await?;
    let deployments = Api::<Deployment>::namespaced(state.client.clone(), &namespace)
        .list(&ListParams::default())
        .await?;
    let reported = server
        .status
        .as_ref()
        .map(|s| s.delete_blockers.clone())
        .unwrap_or_default();
    let mut blockers: Vec<Blocker> = blockers_of(&reported)
        .into_iter()
        .filter(|b| b.kind != "resource" && b.kind != "deployment")
        .chain(
            resources
                .iter()
                .filter(|r| r.spec.server_id.as_deref() == Some(name.as_str()))
                .map(|r| Blocker {
                    kind: "resource".into(),
                    id: r.name_any(),
                }),
        )
        .chain(
            deployments
                .iter()
                .filter(|d| d.spec.server_id == name)
                .map(|d| Blocker {
                    kind: "deployment".into(),
                    id: d.name_any(),
                }),
        )
        .collect();
    blockers.sort();
    blockers.dedup();
    Ok(blockers)
}

/// `kind/id` strings, as the controller writes them, to [`Blocker`]s.
pub fn blockers_of(lines: &[String]) -> Vec<Blocker> {
    lines
        .iter()
        .map(|line| match line.split_once('/') {
            Some((kind, id)) => Blocker {
                kind: kind.into(),
                id: id.into(),
            },
            None => Blocker {
                kind: "object".into(),
                id: line.clone(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_blockers_become_kind_and_id() {
        let blockers = blockers_of(&["resource/res-1".into(), "odd".into()]);
        assert_eq!(blockers[0].kind, "resource");
        assert_eq!(blockers[0].id, "res-1");
        assert_eq!(blockers[1].kind, "object");
    }
}
