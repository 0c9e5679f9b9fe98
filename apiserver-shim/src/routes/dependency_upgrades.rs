//! A managed PostgreSQL's major-version upgrade (Berth; Appaloft has none): `POST
//! /dependency-resources/{id}/major-version-upgrades` writes the new image with
//! `spec.majorVersionUpgrade: dump-restore`; the controller dumps, restores into a new server
//! on a new volume, checks the counts and switches, keeping the old volume. The dependency's
//! `upgrade` follows it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_crds::dependency_resource::{
    DependencyKind, DependencyResource, DependencySource, MajorVersionUpgrade, UpgradePhase,
    major_version,
};
use berth_crds::member::OrganizationRole;
use kube::ResourceExt;
use serde_json::json;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::dependency_resources::{lookup, merge_spec, require_open_for};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::dependencies::{MajorVersionUpgradeStarted, UpgradeDependencyMajorVersion};

/// The code of an upgrade this dependency cannot take.
const UNAVAILABLE: &str = "dependency_resource_upgrade_unavailable";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<UpgradeDependencyMajorVersion, MajorVersionUpgradeStarted, _, _>(
            "/dependency-resources/{dependencyResourceId}/major-version-upgrades",
            "Upgrade a managed PostgreSQL to an image of a newer major version (Berth; 202): \
             every database and login dumped (the old server read-only meanwhile), restored \
             into a new server on a new volume, counted on both, then switched to; the old \
             volume is kept. The dependency's `upgrade` follows it",
            upgrade,
        )
        .success(&[StatusCode::ACCEPTED]),
    ]
}

async fn upgrade(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<UpgradeDependencyMajorVersion>,
) -> ApiResult<(StatusCode, Json<MajorVersionUpgradeStarted>)> {
    let dependency = lookup(&state, &caller, &id)?;
    caller.require_role(OrganizationRole::Admin)?;
    body.validate()?;
    let image = body.image.trim().to_string();
    let (from, to) = versions(&dependency, &image)?;
    require_open_for(&state, &caller, &dependency)?;
    let spec = json!({ "image": image, "majorVersionUpgrade": MajorVersionUpgrade::DumpRestore });
    merge_spec(&state, &caller, &dependency, spec).await?;
    tracing::info!(dependency = %id, %from, %to, "major-version upgrade asked for");
    let started = MajorVersionUpgradeStarted {
        id,
        from_version: from.to_string(),
        to_version: to.to_string(),
        image,
    };
    Ok((StatusCode::ACCEPTED, Json(started)))
}

/// The major version the data has and the one `image` names: a managed PostgreSQL that
/// served, no upgrade running, and a newer major version; otherwise a refusal saying which.
fn versions(dependency: &DependencyResource, image: &str) -> ApiResult<(u32, u32)> {
    let id = dependency.name_any();
    let unavailable = |why: String| Err(ApiError::conflict_code(UNAVAILABLE, why));
    if dependency.spec.kind != DependencyKind::Postgres
        || dependency.spec.source != DependencySource::Managed
    {
        return unavailable(format!(
            "dependency resource {id} is not a managed PostgreSQL: only those are upgraded by \
             dump and restore"
        ));
    }
    let status = dependency.status.as_ref();
    if status
        .and_then(|s| s.upgrade.as_ref())
        .is_some_and(|u| u.phase == UpgradePhase::Running)
    {
        return unavailable(format!(
            "dependency resource {id} is being upgraded already"
        ));
    }
    let Some(from) = status
        .and_then(|s| s.data_version.as_deref())
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return unavailable(format!(
            "dependency resource {id} has not served yet, so its data has no version to \
             upgrade from: wait until it is ready"
        ));
    };
    match major_version(image) {
        Some(to) if to > from => Ok((from, to)),
        Some(to) => Err(ApiError::validation(
            "image",
            format!(
                "image {image} is PostgreSQL {to}: an upgrade needs a newer major version than \
                 the data's ({from})"
            ),
        )),
        None => Err(ApiError::validation(
            "image",
            format!("image {image}: its tag must name the major version (such as postgres:17)"),
        )),
    }
}
