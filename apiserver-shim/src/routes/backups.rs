//! Backups over REST: Appaloft's `POST|GET /dependency-resources/{id}/backups`, `GET
//! /dependency-resources/backups/{backupId}` and `POST …/backups/{backupId}/restore`, and
//! Berth's `POST|GET /backup-targets`. A backup is a DependencyResourceBackup object the
//! controller takes, stores sealed at its target and proves by a test restore; a restore is a
//! DependencyResourceRestore it runs in one transaction. Reads come from the watch caches.
//! Backup policies (schedules, retention) are not served yet.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use std::sync::Arc;

use berth_api::backups::{
    BackupStatus, BackupTargetList, BackupTargetSummary, CreateBackupTarget,
    CreateDependencyResourceBackup, DependencyResourceBackupList, DependencyResourceBackupShow,
    LIST_SCHEMA, RestoreDependencyResourceBackup, SHOW_SCHEMA, TARGETS_LIST_SCHEMA,
};
use berth_api::common::IdResponse;
use berth_crds::backup::{
    BACKUP_LABEL, DEPENDENCY_LABEL, DependencyResourceBackup, DependencyResourceBackupSpec,
    DependencyResourceRestore, DependencyResourceRestoreSpec, PolicySlot,
};
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::member::OrganizationRole;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::backup_targets;
use crate::domain::backups::{choose_target, require_backed_up, require_restorable, summary};
use crate::domain::dependency_resources::lookup as lookup_dependency;
use crate::domain::objects::{all_in, find_in};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateDependencyResourceBackup, IdResponse, _, _>(
            "/dependency-resources/{dependencyResourceId}/backups",
            "Back up a ready managed PostgreSQL or Redis (201): dumped in its container, sealed to a \
             backup target (targetId; the organization's only one when left out) and proven by \
             a test restore before it is `ready`",
            create,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::get::<DependencyResourceBackupList, _, _>(
            "/dependency-resources/{dependencyResourceId}/backups",
            "List a dependency resource's backups, newest first (status filter)",
            list,
        ),
        Endpoint::get::<DependencyResourceBackupShow, _, _>(
            "/dependency-resources/backups/{backupId}",
            "Show a backup: status, step, artifact and what its test restore counted",
            show,
        ),
        Endpoint::post::<RestoreDependencyResourceBackup, IdResponse, _, _>(
            "/dependency-resources/backups/{backupId}/restore",
            "Restore a ready backup (202) into its own database, or into another of its kind \
             in the same project and environment (targetDependencyResourceId); \
             acknowledgeDataOverwrite and acknowledgeRuntimeNotRestarted must be true. A \
             PostgreSQL's runs in one transaction, a Redis takes the snapshot whole as a \
             replica: the backup's latestRestoreAttempt ends completed with a report, or failed \
             with the cause",
            restore,
        )
        .success(&[StatusCode::ACCEPTED]),
        Endpoint::post::<CreateBackupTarget, IdResponse, _, _>(
            "/backup-targets",
            "Add a backup target (Berth; 201): a directory on a registered server, checked \
             writable by the controller",
            create_target,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::get::<BackupTargetList, _, _>(
            "/backup-targets",
            "List the organization's backup targets and whether each could be written",
            list_targets,
        ),
    ]
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(dependency_id): Path<String>,
    JsonBody(body): JsonBody<CreateDependencyResourceBackup>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let dependency = lookup_dependency(&state, &caller, &dependency_id)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    require_backed_up(&dependency, body.provider_key.as_deref())?;
    let namespace = organization.namespace.clone();
    let targets = all_in(&state.caches.backup_targets, &namespace);
    let target = choose_target(&targets, body.target_id.as_deref())?;
    let id = new_id(&format!("{dependency_id}-bk"));
    let mut backup = DependencyResourceBackup::new(
        &id,
        DependencyResourceBackupSpec {
            dependency_resource_id: dependency_id.clone(),
            target_id: target.name_any(),
            description: body.description,
            slot: PolicySlot::default(),
            uploaded: None,
        },
    );
    backup
        .labels_mut()
        .insert(DEPENDENCY_LABEL.into(), dependency_id.clone());
    let api = Api::<DependencyResourceBackup>::namespaced(state.client.clone(), &namespace);
    apply(&api, &state.caches.backups, Some(&caller), backup).await?;
    tracing::info!(backup = %id, dependency = %dependency_id, "backup requested");
    Ok((StatusCode::CREATED, Json(IdResponse { id })))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(dependency_id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<DependencyResourceBackupList>> {
    known_params(&query, &["status"])?;
    let dependency = lookup_dependency(&state, &caller, &dependency_id)?;
    let statuses: Vec<&str> = BackupStatus::ALL.iter().map(|s| s.as_str()).collect();
    let wanted = query.one_of("status", &statuses, None)?;
    let namespace = dependency.namespace().unwrap_or_default();
    let restores = all_in(&state.caches.restores, &namespace);
    let mut backups: Vec<_> = all_in(&state.caches.backups, &namespace)
        .into_iter()
        .filter(|b| b.spec.dependency_resource_id == dependency_id)
        .map(|b| summary(&b, &dependency, &restores))
        .filter(|s| wanted.is_none_or(|w| s.status.as_str() == w))
        .collect();
    backups.sort_by(|a, b| (&b.created_at, &b.id).cmp(&(&a.created_at, &a.id)));
    Ok(Json(DependencyResourceBackupList {
        schema_version: LIST_SCHEMA.into(),
        items: backups,
        generated_at: Timestamp::now().to_string(),
    }))
}

/// A backup the caller may see and its dependency, or 404 (a backup of a dependency the
/// caller cannot see looks like a missing one).
fn lookup_backup(
    state: &AppState,
    caller: &Caller,
    backup_id: &str,
) -> ApiResult<(Arc<DependencyResourceBackup>, Arc<DependencyResource>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let backup = find_in(
        &state.caches.backups,
        &organization.namespace,
        backup_id,
        "backup",
    )?;
    let dependency = lookup_dependency(state, caller, &backup.spec.dependency_resource_id)
        .map_err(|_| ApiError::not_found("backup", backup_id))?;
    Ok((backup, dependency))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(backup_id): Path<String>,
) -> ApiResult<Json<DependencyResourceBackupShow>> {
    let (backup, dependency) = lookup_backup(&state, &caller, &backup_id)?;
    let restores = all_in(&state.caches.restores, &caller.organization()?.namespace);
    Ok(Json(DependencyResourceBackupShow {
        schema_version: SHOW_SCHEMA.into(),
        backup: summary(&backup, &dependency, &restores),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn restore(
    State(state): State<AppState>,
    caller: Caller,
    Path(backup_id): Path<String>,
    JsonBody(body): JsonBody<RestoreDependencyResourceBackup>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let (backup, source) = lookup_backup(&state, &caller, &backup_id)?;
    caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let into = match &body.target_dependency_resource_id {
        Some(id) => lookup_dependency(&state, &caller, id)
            .map_err(|error| error.with_detail("field", "targetDependencyResourceId"))?,
        None => source.clone(),
    };
    let namespace = caller.organization()?.namespace.clone();
    let restores = all_in(&state.caches.restores, &namespace);
    require_restorable(&backup, &source, &into, &restores)?;
    let id = new_id(&format!("{backup_id}-rs"));
    let mut restore = DependencyResourceRestore::new(
        &id,
        DependencyResourceRestoreSpec {
            backup_id: backup_id.clone(),
            target_dependency_resource_id: into.name_any(),
            acknowledge_data_overwrite: body.acknowledge_data_overwrite,
            restore_label: body.restore_label,
        },
    );
    restore
        .labels_mut()
        .insert(BACKUP_LABEL.into(), backup_id.clone());
    let api = Api::<DependencyResourceRestore>::namespaced(state.client.clone(), &namespace);
    apply(&api, &state.caches.restores, Some(&caller), restore).await?;
    tracing::info!(restore = %id, backup = %backup_id, "restore requested");
    Ok((StatusCode::ACCEPTED, Json(IdResponse { id })))
}

async fn create_target(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateBackupTarget>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let organization = caller.require_role(OrganizationRole::Admin)?;
    body.validate()?;
    let id = new_id("bkt");
    backup_targets::create(&state, &caller, &organization.namespace, &id, body).await?;
    Ok((StatusCode::CREATED, Json(IdResponse { id })))
}

async fn list_targets(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<BackupTargetList>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let mut items: Vec<BackupTargetSummary> =
        all_in(&state.caches.backup_targets, &organization.namespace)
            .iter()
            .map(|t| backup_targets::summary(t))
            .collect();
    items.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(Json(BackupTargetList {
        schema_version: TARGETS_LIST_SCHEMA.into(),
        items,
    }))
}
