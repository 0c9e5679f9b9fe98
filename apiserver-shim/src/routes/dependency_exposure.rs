//! A managed dependency's host port (Berth; Appaloft has none): `POST
//! /dependency-resources/{id}/exposure` publishes it for the listed source addresses only,
//! `DELETE` closes it. The controller puts the server's firewall rules in place before Docker
//! publishes the port and says on the object (`Exposed`) whether it did.

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_crds::dependency_resource::DependencySource;
use berth_crds::member::OrganizationRole;
use kube::ResourceExt;
use serde_json::json;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::dependency_resources::{
    lookup, merge_spec, require_free_port, require_open_for,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::dependencies::{CloseDependencyExposure, ExposeDependencyResource};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<ExposeDependencyResource, IdResponse, _, _>(
            "/dependency-resources/{dependencyResourceId}/exposure",
            "Publish a managed dependency's port on its server's host for the listed source \
             addresses only (Berth): the server's firewall drops every other source; the \
             dependency's `exposure.published` says once it is in place",
            expose,
        ),
        Endpoint::delete::<CloseDependencyExposure, IdResponse, _, _>(
            "/dependency-resources/{dependencyResourceId}/exposure",
            "Close a managed dependency's host port again (Berth): its bound apps keep reaching \
             it on its private network",
            close,
        ),
    ]
}

async fn expose(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ExposeDependencyResource>,
) -> ApiResult<Json<IdResponse>> {
    let dependency = lookup(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Admin)?;
    body.validate()?;
    if dependency.spec.source == DependencySource::Imported {
        return Err(ApiError::conflict_code(
            "dependency_resource_exposure_unsupported",
            format!(
                "dependency resource {id} is imported: Berth does not run it, so it has no port to publish"
            ),
        ));
    }
    let exposure = body.exposure();
    let namespace = dependency.namespace().unwrap_or_default();
    let server = &dependency.spec.server_id;
    require_free_port(&state, &namespace, server, Some(&id), &exposure)?;
    require_open_for(&state, &caller, &dependency)?;
    merge_spec(
        &state,
        &caller,
        &dependency,
        json!({ "exposure": exposure }),
    )
    .await?;
    tracing::info!(dependency = %id, "dependency exposure asked for");
    Ok(Json(IdResponse { id }))
}

async fn close(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<CloseDependencyExposure>,
) -> ApiResult<Json<IdResponse>> {
    let dependency = lookup(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Admin)?;
    require_open_for(&state, &caller, &dependency)?;
    if dependency.spec.exposure.is_some() {
        merge_spec(&state, &caller, &dependency, json!({ "exposure": null })).await?;
        tracing::info!(dependency = %id, "dependency exposure closed");
    }
    Ok(Json(IdResponse { id }))
}
