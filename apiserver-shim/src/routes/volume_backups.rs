//! Storage volume backups over REST: Appaloft's `POST|GET /storage-volumes/{id}/backups`,
//! `GET /storage-volume-backups/{backupId}` and `POST /storage-volume-backups/{backupId}/restore`.
//! A backup is a StorageVolumeBackup the controller reads on the volume's server, stores sealed
//! at a backup target and proves by extracting it into a throwaway volume; a restore is a
//! StorageVolumeRestore it writes into a new volume (made here, in the backup's environment)
//! or in place. `POST …/backups/plan` answers what a backup would do without taking it.
//! Reads come from the watch caches. Policies are in `volume_backup_policies`; pruning by REST
//! is not served (a policy prunes by its rules; delete the StorageVolumeBackup object to remove
//! one by hand with its artifact).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use std::sync::Arc;

use berth_api::backups::BackupStatus;
use berth_api::common::IdResponse;
use berth_api::volume_backups::{
    CreateStorageVolumeBackup, LIST_SCHEMA, RestoreStorageVolumeBackup, RestoredStorageVolume,
    SHOW_SCHEMA, StorageVolumeBackupList, StorageVolumeBackupPlan, StorageVolumeBackupShow,
    VolumeConsistency, VolumeRestoreMode,
};
use berth_crds::backup::PolicySlot;
use berth_crds::member::OrganizationRole;
use berth_crds::server::Server;
use berth_crds::storage_volume::{StorageVolume, StorageVolumeKind, StorageVolumeSpec};
use berth_crds::volume_backup::{
    STORAGE_VOLUME_LABEL, StorageVolumeBackup, StorageVolumeBackupSpec, StorageVolumeRestore,
    StorageVolumeRestoreSpec, VOLUME_BACKUP_LABEL,
};
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::backups::choose_target;
use crate::domain::objects::{all_in, find_in};
use crate::domain::servers;
use crate::domain::storage_volumes::lookup as lookup_volume;
use crate::domain::volume_backups::{self, PlanInputs, default_server, summary};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

const RESTORE_BLOCKED: &str = "storage_volume_restore_blocked";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateStorageVolumeBackup, IdResponse, _, _>(
            "/storage-volumes/{storageVolumeId}/backups",
            "Back up a storage volume's files on one server (201; serverId, else the server of \
             a resource attaching it): read as a tar archive, sealed to a backup target \
             (targetId; the organization's only one when left out) and proven by extracting it \
             into a throwaway volume and reading the same tree back before it is `ready`",
            create,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::post::<CreateStorageVolumeBackup, StorageVolumeBackupPlan, _, _>(
            "/storage-volumes/{storageVolumeId}/backups/plan",
            "Plan a backup of a storage volume without taking it: with the body a create \
             would take, the server and target it would use, the provider, whether the target \
             is on the volume's own server (localOnly), the resources a quiesced backup would \
             stop, and blockers (server or target not chosen or not ready). Nothing is written",
            plan,
        ),
        Endpoint::get::<StorageVolumeBackupList, _, _>(
            "/storage-volumes/{storageVolumeId}/backups",
            "List a storage volume's backups, newest first (status filter)",
            list,
        ),
        Endpoint::get::<StorageVolumeBackupShow, _, _>(
            "/storage-volume-backups/{backupId}",
            "Show a storage volume backup: status, artifact, the tree its test restore read \
             back and its newest restore",
            show,
        ),
        Endpoint::post::<RestoreStorageVolumeBackup, RestoredStorageVolume, _, _>(
            "/storage-volume-backups/{backupId}/restore",
            "Restore a ready volume backup (202) on the server it was taken on: into a new \
             named volume of its environment (targetMode new-volume, the default; \
             restoredStorageVolumeId answered) or over its own volume (in-place, with \
             acknowledgeDestructiveRestore; the containers using it are stopped meanwhile). \
             The files are read back and must be the backup's tree",
            restore,
        )
        .success(&[StatusCode::ACCEPTED]),
    ]
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(volume_id): Path<String>,
    JsonBody(body): JsonBody<CreateStorageVolumeBackup>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let volume = lookup_volume(&state, &caller, &volume_id)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let namespace = organization.namespace.clone();
    let server = choose_server(&state, &caller, &volume, body.server_id.as_deref())?;
    let targets = all_in(&state.caches.backup_targets, &namespace);
    let target = choose_target(&targets, body.target_id.as_deref())?;
    let id = new_id(&format!("{volume_id}-bk"));
    let mut backup = StorageVolumeBackup::new(
        &id,
        StorageVolumeBackupSpec {
            storage_volume_id: volume_id.clone(),
            server_id: server.name_any(),
            target_id: target.name_any(),
            description: body.description,
            consistency: requested_consistency(&body.requested_consistency),
            slot: PolicySlot::default(),
        },
    );
    backup
        .labels_mut()
        .insert(STORAGE_VOLUME_LABEL.into(), volume_id.clone());
    let api = Api::<StorageVolumeBackup>::namespaced(state.client.clone(), &namespace);
    apply(&api, &state.caches.volume_backups, Some(&caller), backup).await?;
    tracing::info!(backup = %id, volume = %volume_id, "volume backup requested");
    Ok((StatusCode::CREATED, Json(IdResponse { id })))
}

/// The plan of a backup asked for with `body`: the same choices as `create`, each refusal a
/// blocker, and what is not ready now; nothing is written.
async fn plan(
    State(state): State<AppState>,
    caller: Caller,
    Path(volume_id): Path<String>,
    JsonBody(body): JsonBody<CreateStorageVolumeBackup>,
) -> ApiResult<Json<StorageVolumeBackupPlan>> {
    let volume = lookup_volume(&state, &caller, &volume_id)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let namespace = &organization.namespace;
    let targets = all_in(&state.caches.backup_targets, namespace);
    let resources = all_in(&state.caches.resources, namespace);
    Ok(Json(volume_backups::plan(PlanInputs {
        volume: &volume,
        server: choose_server(&state, &caller, &volume, body.server_id.as_deref()),
        target: choose_target(&targets, body.target_id.as_deref()),
        consistency: requested_consistency(&body.requested_consistency),
        resources: &resources,
    })))
}

/// The server a backup of `volume` reads: the one named, else the server of a resource that
/// attaches it.
fn choose_server(
    state: &AppState,
    caller: &Caller,
    volume: &StorageVolume,
    named: Option<&str>,
) -> ApiResult<Arc<Server>> {
    let namespace = volume.namespace().unwrap_or_default();
    let server_id = match named {
        Some(id) => id.to_string(),
        None => default_server(volume, &all_in(&state.caches.resources, &namespace))?,
    };
    servers::lookup(state, caller, &server_id)
        .map_err(|error| error.with_detail("field", "serverId"))
}

/// The consistency a (validated) request asks for; crash-consistent when it names none.
fn requested_consistency(requested: &Option<String>) -> VolumeConsistency {
    requested
        .as_deref()
        .and_then(VolumeConsistency::parse)
        .unwrap_or_default()
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(volume_id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<StorageVolumeBackupList>> {
    known_params(&query, &["status"])?;
    let volume = lookup_volume(&state, &caller, &volume_id)?;
    let statuses: Vec<&str> = BackupStatus::ALL.iter().map(|s| s.as_str()).collect();
    let wanted = query.one_of("status", &statuses, None)?;
    let namespace = volume.namespace().unwrap_or_default();
    let restores = all_in(&state.caches.volume_restores, &namespace);
    let mut backups: Vec<_> = all_in(&state.caches.volume_backups, &namespace)
        .into_iter()
        .filter(|b| b.spec.storage_volume_id == volume_id)
        .map(|b| summary(&b, &volume, &restores))
        .filter(|s| wanted.is_none_or(|w| s.status.as_str() == w))
        .collect();
    backups.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
    Ok(Json(StorageVolumeBackupList {
        schema_version: LIST_SCHEMA.into(),
        items: backups,
        generated_at: Timestamp::now().to_string(),
    }))
}

/// A backup the caller may see and its volume, or 404 (a backup of a volume the caller
/// cannot see looks like a missing one).
fn lookup_backup(
    state: &AppState,
    caller: &Caller,
    backup_id: &str,
) -> ApiResult<(Arc<StorageVolumeBackup>, Arc<StorageVolume>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let backup = find_in(
        &state.caches.volume_backups,
        &organization.namespace,
        backup_id,
        "storage volume backup",
    )?;
    let volume = lookup_volume(state, caller, &backup.spec.storage_volume_id)
        .map_err(|_| ApiError::not_found("storage volume backup", backup_id))?;
    Ok((backup, volume))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(backup_id): Path<String>,
) -> ApiResult<Json<StorageVolumeBackupShow>> {
    let (backup, volume) = lookup_backup(&state, &caller, &backup_id)?;
    let restores = all_in(
        &state.caches.volume_restores,
        &caller.organization()?.namespace,
    );
    Ok(Json(StorageVolumeBackupShow {
        schema_version: SHOW_SCHEMA.into(),
        backup: summary(&backup, &volume, &restores),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn restore(
    State(state): State<AppState>,
    caller: Caller,
    Path(backup_id): Path<String>,
    JsonBody(body): JsonBody<RestoreStorageVolumeBackup>,
) -> ApiResult<(StatusCode, Json<RestoredStorageVolume>)> {
    let (backup, source) = lookup_backup(&state, &caller, &backup_id)?;
    caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let namespace = caller.organization()?.namespace.clone();
    let ready = backup.status.as_ref().map(|s| s.status) == Some(BackupStatus::Ready);
    if !ready {
        return Err(ApiError::conflict_code(
            RESTORE_BLOCKED,
            format!("backup {backup_id} is not ready to restore"),
        ));
    }
    let restores = all_in(&state.caches.volume_restores, &namespace);
    let into = match body.target_mode {
        VolumeRestoreMode::InPlace => in_place_target(&source, &body, &restores)?,
        VolumeRestoreMode::NewVolume => {
            new_volume(&state, &caller, &namespace, &source, &body).await?
        }
    };
    let id = new_id(&format!("{backup_id}-rs"));
    let mut restore = StorageVolumeRestore::new(
        &id,
        StorageVolumeRestoreSpec {
            backup_id: backup_id.clone(),
            target_mode: body.target_mode,
            target_storage_volume_id: into.clone(),
            acknowledge_destructive_restore: body.acknowledge_destructive_restore == Some(true),
        },
    );
    restore
        .labels_mut()
        .insert(VOLUME_BACKUP_LABEL.into(), backup_id.clone());
    let api = Api::<StorageVolumeRestore>::namespaced(state.client.clone(), &namespace);
    apply(&api, &state.caches.volume_restores, Some(&caller), restore).await?;
    tracing::info!(restore = %id, backup = %backup_id, into = %into, "volume restore requested");
    let restored = (body.target_mode == VolumeRestoreMode::NewVolume).then_some(into);
    Ok((
        StatusCode::ACCEPTED,
        Json(RestoredStorageVolume {
            id,
            restored_storage_volume_id: restored,
        }),
    ))
}

/// The backup's own volume, unless another one is named or a restore into it is pending.
fn in_place_target(
    source: &StorageVolume,
    body: &RestoreStorageVolumeBackup,
    restores: &[Arc<StorageVolumeRestore>],
) -> ApiResult<String> {
    let own = source.name_any();
    if let Some(named) = body
        .target_storage_volume_id
        .as_ref()
        .filter(|n| **n != own)
    {
        return Err(ApiError::validation(
            "targetStorageVolumeId",
            format!("an in-place restore writes over the backup's own volume {own}, not {named}"),
        ));
    }
    let pending = restores.iter().find(|r| {
        r.spec.target_storage_volume_id == own
            && r.status
                .as_ref()
                .is_none_or(|s| s.status.as_str() == "pending")
    });
    if let Some(pending) = pending {
        return Err(ApiError::conflict_code(
            RESTORE_BLOCKED,
            format!(
                "restore {} into {own} has not ended yet",
                pending.name_any()
            ),
        ));
    }
    Ok(own)
}

/// Makes the named volume a new-volume restore writes into, in the backup's environment.
async fn new_volume(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    source: &StorageVolume,
    body: &RestoreStorageVolumeBackup,
) -> ApiResult<String> {
    let name = body
        .restored_volume_name
        .as_deref()
        .map(str::trim)
        .map(String::from)
        .unwrap_or_else(|| format!("{} restored", source.spec.name));
    let id = new_id("vol");
    let volume = StorageVolume::new(
        &id,
        StorageVolumeSpec {
            project_id: source.spec.project_id.clone(),
            environment_id: source.spec.environment_id.clone(),
            name,
            kind: StorageVolumeKind::NamedVolume,
            source_path: None,
            description: Some(format!("restored from a backup of {}", source.name_any())),
        },
    );
    let api = Api::<StorageVolume>::namespaced(state.client.clone(), namespace);
    apply(&api, &state.caches.storage_volumes, Some(caller), volume).await?;
    Ok(id)
}
