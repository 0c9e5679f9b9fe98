//! A dump made outside Berth, uploaded as a backup (Berth; Appaloft has no such operation):
//! `POST /dependency-resources/{id}/backups/upload`, the body a `pg_dump -Fc` archive. The
//! shim stages it on the database's server (`domain::dump_uploads`) and creates a
//! DependencyResourceBackup naming it; the controller stores it sealed at the target, proves
//! it by a test restore like any backup and removes the staged file. Restoring it is the
//! backup restore every backup has (in place, or into a clone).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use berth_api::backups::UploadDependencyResourceBackup;
use berth_api::common::IdResponse;
use berth_crds::backup::{
    DEPENDENCY_LABEL, DependencyResourceBackup, DependencyResourceBackupSpec, PolicySlot,
    UploadedDump, upload_path,
};
use berth_crds::dependency_resource::{DependencyKind, DependencyResource};
use berth_crds::member::OrganizationRole;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::backups::{choose_target, require_backed_up};
use crate::domain::dependency_resources::lookup as lookup_dependency;
use crate::domain::dump_uploads::{self, Staged};
use crate::domain::objects::{all_in, find_in};
use crate::domain::servers::server_connection;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

const ACTION: &str = "store the uploaded dump on the database's server";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::upload::<IdResponse, _, _>(
            "/dependency-resources/{dependencyResourceId}/backups/upload",
            "Upload a dump made outside Berth as a backup of a ready managed PostgreSQL \
             (Berth; 201): the body is a `pg_dump -Fc` archive, the query may name targetId, \
             description and fileName. It is stored sealed at the target and proven by a test \
             restore like any backup, then restored with …/backups/{backupId}/restore; the \
             database is not touched until then",
            upload,
        )
        .success(&[StatusCode::CREATED]),
    ]
}

async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    Path(dependency_id): Path<String>,
    query: QueryParams,
    body: Body,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    known_params(&query, UploadDependencyResourceBackup::PARAMETERS)?;
    let asked = UploadDependencyResourceBackup {
        target_id: query.0.get("targetId").cloned(),
        description: query.0.get("description").cloned(),
        file_name: query.0.get("fileName").cloned(),
    };
    let dependency = lookup_dependency(&state, &caller, &dependency_id)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    asked.validate()?;
    require_postgres(&dependency)?;
    require_backed_up(&dependency, None)?;
    let namespace = organization.namespace.clone();
    let targets = all_in(&state.caches.backup_targets, &namespace);
    let target = choose_target(&targets, asked.target_id.as_deref())?;
    // Read before the server is reached: anything but an archive changes nothing.
    let body = dump_uploads::check(body).await?;
    let server = find_in(
        &state.caches.servers,
        &namespace,
        &dependency.spec.server_id,
        "server",
    )?;
    let id = new_id(&format!("{dependency_id}-up"));
    let (connection, _lease) = server_connection(&state, &server, ACTION).await?;
    let path = upload_path(&namespace, &id);
    let Staged { bytes, sha256 } = dump_uploads::stage(&connection, &path, body).await?;
    let mut backup = DependencyResourceBackup::new(
        &id,
        DependencyResourceBackupSpec {
            dependency_resource_id: dependency_id.clone(),
            target_id: target.name_any(),
            description: asked.description,
            slot: PolicySlot::default(),
            uploaded: Some(UploadedDump {
                bytes,
                sha256,
                file_name: asked.file_name,
            }),
        },
    );
    backup
        .labels_mut()
        .insert(DEPENDENCY_LABEL.into(), dependency_id.clone());
    let api = Api::<DependencyResourceBackup>::namespaced(state.client.clone(), &namespace);
    if let Err(error) = apply(&api, &state.caches.backups, Some(&caller), backup).await {
        dump_uploads::discard(&connection, &path).await;
        return Err(error);
    }
    tracing::info!(backup = %id, dependency = %dependency_id, bytes, "dump uploaded");
    Ok((StatusCode::CREATED, Json(IdResponse { id })))
}

/// 422 unless `dependency` is a PostgreSQL: an uploaded dump is a PostgreSQL archive.
fn require_postgres(dependency: &DependencyResource) -> ApiResult<()> {
    match dependency.spec.kind {
        DependencyKind::Postgres => Ok(()),
        other => Err(ApiError::validation(
            "dependencyResourceId",
            format!(
                "dependency resource {} is a {}; an uploaded dump (pg_dump -Fc) is restored \
                 only into a PostgreSQL",
                dependency.name_any(),
                other.as_str()
            ),
        )),
    }
}
