//! Server changes beyond the spec, on Appaloft's routes and shapes:
//! `POST /servers/{id}/rename` and `GET /servers/{id}/delete-check` (what stands in the way
//! of deleting it, without trying).

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_api::servers::{Blocker, RenameServer};
use berth_crds::deployment::Deployment;
use berth_crds::limits::NAME_MAX;
use berth_crds::member::OrganizationRole;
use berth_crds::server::ServerLifecycle;
use kube::Api;
use serde_json::json;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::fields::bounded;
use crate::domain::servers::{current_blockers, lookup, merge_spec, writer};
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::servers::{DeleteBlocker, DeleteCheck};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<RenameServer, IdResponse, _, _>(
            "/servers/{serverId}/rename",
            "Rename a server (its display name; the id stays)",
            rename,
        ),
        Endpoint::get::<DeleteCheck, _, _>(
            "/servers/{serverId}/delete-check",
            "What stands in the way of deleting a server",
            delete_check,
        ),
    ]
}

async fn rename(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RenameServer>,
) -> ApiResult<Json<IdResponse>> {
    let name = body.name.trim();
    bounded("name", name, NAME_MAX)?;
    if let Some(key) = &body.idempotency_key {
        bounded("idempotencyKey", key, 255)?;
    }
    let server = lookup(&state, &caller, &id)?;
    writer(&caller)?;
    if server.spec.name.as_deref() != Some(name) {
        merge_spec(&state, &caller, &id, json!({ "name": name })).await?;
        tracing::info!(server = %id, "server renamed");
    }
    Ok(Json(IdResponse { id }))
}

async fn delete_check(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<DeleteCheck>> {
    caller.require_role(OrganizationRole::Member)?;
    let server = lookup(&state, &caller, &id)?;
    let active = server.spec.lifecycle_status == ServerLifecycle::Active;
    let blockers = current_blockers(&state, &server).await?;
    let deployments =
        Api::<Deployment>::namespaced(state.client.clone(), &caller.organization()?.namespace);
    let mut listed = Vec::new();
    for blocker in &blockers {
        let running = blocker.kind == "deployment" && is_running(&deployments, &blocker.id).await?;
        listed.push(appaloft_blocker(blocker, running));
    }
    if active {
        listed.insert(
            0,
            DeleteBlocker {
                kind: "active-server".into(),
                related_entity_id: Some(id.clone()),
                related_entity_type: Some("server".into()),
            },
        );
    }
    Ok(Json(DeleteCheck {
        schema_version: "servers.delete-check/v1".into(),
        server_id: id,
        lifecycle_status: if active { "active" } else { "inactive" }.into(),
        eligible: listed.is_empty(),
        blockers: listed,
        checked_at: k8s_openapi::jiff::Timestamp::now().to_string(),
    }))
}

async fn is_running(deployments: &Api<Deployment>, name: &str) -> ApiResult<bool> {
    let deployment = deployments.get_opt(name).await?;
    Ok(deployment.is_some_and(|d| {
        !d.status
            .and_then(|s| s.status)
            .is_some_and(|s| s.is_terminal())
    }))
}

/// Berth's blocker (`kind/id` of a live object) in Appaloft's words.
fn appaloft_blocker(blocker: &Blocker, running: bool) -> DeleteBlocker {
    let kind = match blocker.kind.as_str() {
        "resource" => "resource-placement",
        "deployment" if running => "active-deployment",
        "deployment" => "deployment-history",
        other => other,
    };
    DeleteBlocker {
        kind: kind.into(),
        related_entity_id: Some(blocker.id.clone()),
        related_entity_type: Some(blocker.kind.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn berth_blockers_read_in_appaloft_kinds() {
        let blocker = |kind: &str| Blocker {
            kind: kind.into(),
            id: "x".into(),
        };
        let kind = |b: &Blocker, running| appaloft_blocker(b, running).kind;
        assert_eq!(kind(&blocker("resource"), false), "resource-placement");
        assert_eq!(kind(&blocker("deployment"), true), "active-deployment");
        assert_eq!(kind(&blocker("deployment"), false), "deployment-history");
    }
}
