//! Storage volume backups as REST shows them: a StorageVolumeBackup object as Appaloft's
//! backup record (with Berth's server, artifact and tree), its restores as restore attempts,
//! which server a backup reads when the request names none, and a backup's plan.

use std::sync::Arc;

use berth_api::backups::{BackupArtifactSummary, BackupStatus};
use berth_api::volume_backups::{
    BackupPlanBlocker, PLAN_SCHEMA, StorageVolumeBackupPlan, StorageVolumeBackupSummary,
    TAR_VOLUME_ADAPTER, VolumeConsistency, VolumeRestoreAttemptSummary, VolumeRestoreMode,
    VolumeRestoreTarget, VolumeTreeSummary,
};
use berth_crds::backup::{BackupTarget, TargetPlace, VolumeTree};
use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::resource::Resource;
use berth_crds::server::Server;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::volume_backup::{StorageVolumeBackup, StorageVolumeRestore};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::domain::backups::retention_status;
use crate::error::{ApiError, ApiResult};

fn time(at: &Option<Time>) -> Option<String> {
    at.as_ref().map(|t| t.0.to_string())
}

fn tree_summary(tree: VolumeTree) -> VolumeTreeSummary {
    VolumeTreeSummary {
        files: tree.files,
        directories: tree.directories,
        links: tree.links,
        file_bytes: tree.file_bytes,
        sha256: tree.sha256,
    }
}

/// The record of `backup`, a backup of `volume`, with its newest restore among `restores`.
pub fn summary(
    backup: &StorageVolumeBackup,
    volume: &StorageVolume,
    restores: &[Arc<StorageVolumeRestore>],
) -> StorageVolumeBackupSummary {
    let status = backup.status.clone().unwrap_or_default();
    let created = time(&backup.metadata.creation_timestamp).unwrap_or_default();
    let ready = status.status == BackupStatus::Ready;
    let artifact = status.artifact.clone();
    StorageVolumeBackupSummary {
        id: backup.name_any(),
        storage_volume_id: backup.spec.storage_volume_id.clone(),
        project_id: volume.spec.project_id.clone(),
        environment_id: volume.spec.environment_id.clone(),
        storage_volume_kind: volume.spec.kind.as_str().into(),
        source_adapter_key: TAR_VOLUME_ADAPTER.into(),
        server_id: backup.spec.server_id.clone(),
        target_ref: backup.spec.target_id.clone(),
        consistency: backup.spec.consistency.as_str().into(),
        quiesced: status.quiesced.clone(),
        status: status.status,
        attempt_id: backup.name_any(),
        requested_at: created.clone(),
        retention_status: retention_status(&backup.spec.slot).into(),
        local_only: false,
        artifact_handle: artifact
            .as_ref()
            .filter(|_| ready)
            .map(|a| a.location.clone()),
        size_bytes: artifact.as_ref().map(|a| a.bytes),
        checksum: artifact.as_ref().map(|a| a.sha256.clone()),
        completed_at: time(&status.completed_at),
        failed_at: time(&status.failed_at),
        failure_code: status.failure_code,
        failure_message: status.failure_message,
        latest_restore_attempt: restores
            .iter()
            .filter(|r| r.spec.backup_id == backup.name_any())
            .max_by_key(|r| {
                (
                    r.metadata.creation_timestamp.clone().map(|t| t.0),
                    r.name_any(),
                )
            })
            .map(|r| restore_summary(r)),
        created_at: created,
        description: backup.spec.description.clone(),
        step: status.step,
        artifact: artifact.map(|a| BackupArtifactSummary {
            location: a.location,
            bytes: a.bytes,
            sha256: a.sha256,
            encryption: a.encryption,
        }),
        tree: status.verification.and_then(|v| v.tree).map(tree_summary),
        policy_id: backup.spec.slot.policy_id.clone(),
        scheduled_for: backup.spec.slot.scheduled_for.clone(),
        late: backup.spec.slot.late,
    }
}

/// A volume restore as Appaloft's restore attempt.
pub fn restore_summary(restore: &StorageVolumeRestore) -> VolumeRestoreAttemptSummary {
    let status = restore.status.clone().unwrap_or_default();
    let in_place = restore.spec.target_mode == VolumeRestoreMode::InPlace;
    let into = restore.spec.target_storage_volume_id.clone();
    VolumeRestoreAttemptSummary {
        attempt_id: restore.name_any(),
        status: status.status,
        requested_at: time(&restore.metadata.creation_timestamp).unwrap_or_default(),
        target: VolumeRestoreTarget {
            storage_volume_id: into.clone(),
            restored_volume_id: (!in_place).then_some(into),
            destructive_in_place: in_place,
        },
        completed_at: time(&status.completed_at),
        failed_at: time(&status.failed_at),
        failure_code: status.failure_code,
        failure_message: status.failure_message,
        tree: status.report.and_then(|r| r.tree).map(tree_summary),
    }
}

/// The server a backup of `volume` reads when the request names none: the server of a
/// resource that attaches it (the first by id), or 422 naming `serverId`.
pub fn default_server(volume: &StorageVolume, resources: &[Arc<Resource>]) -> ApiResult<String> {
    let id = volume.name_any();
    let mut attaching: Vec<&Arc<Resource>> = resources
        .iter()
        .filter(|r| {
            r.spec
                .storage_attachments
                .iter()
                .any(|a| a.storage_volume_id == id)
        })
        .collect();
    attaching.sort_by_key(|r| r.name_any());
    attaching
        .iter()
        .find_map(|r| r.spec.server_id.clone())
        .ok_or_else(|| {
            ApiError::validation(
                "serverId",
                format!(
                    "serverId is required: no resource attaching storage volume {id} names a \
                     server, so Berth cannot tell where its files are"
                ),
            )
        })
}

/// What a backup plan is made of: the volume, the server and target the request would use
/// (or why none could be chosen), the consistency asked for and the organization's resources.
pub struct PlanInputs<'a> {
    pub volume: &'a StorageVolume,
    pub server: Result<Arc<Server>, ApiError>,
    pub target: Result<Arc<BackupTarget>, ApiError>,
    pub consistency: VolumeConsistency,
    pub resources: &'a [Arc<Resource>],
}

/// The plan of a backup: the choices a create would make and every reason it would not run.
pub fn plan(inputs: PlanInputs) -> StorageVolumeBackupPlan {
    let volume_id = inputs.volume.name_any();
    let mut blockers = Vec::new();
    let server = unless_blocked(inputs.server, "server-unresolved", &mut blockers);
    let target = unless_blocked(inputs.target, "target-unresolved", &mut blockers);
    if let Some(server) = &server
        && let Some(why) = not_ready(server.status.as_ref().map(|s| &s.conditions[..]))
    {
        blockers.push(blocker(
            "server-not-ready",
            format!("server {}: {why}", server.name_any()),
            "serverId",
        ));
    }
    if let Some(target) = &target
        && let Some(why) = not_ready(target.status.as_ref().map(|s| &s.conditions[..]))
    {
        blockers.push(blocker(
            "target-not-ready",
            format!("backup target {}: {why}", target.name_any()),
            "targetId",
        ));
    }
    let server_id = server.as_ref().map(|s| s.name_any());
    let stopped_resources = match (&server_id, inputs.consistency) {
        (Some(server_id), VolumeConsistency::Quiesced) => {
            attaching_on(inputs.resources, &volume_id, server_id)
        }
        _ => Vec::new(),
    };
    let place = target.as_ref().and_then(|t| t.spec.place().ok());
    StorageVolumeBackupPlan {
        schema_version: PLAN_SCHEMA.into(),
        storage_volume_id: volume_id,
        source_adapter_key: TAR_VOLUME_ADAPTER.into(),
        target_provider_key: place.as_ref().map(|p| target_provider_key(p).into()),
        consistency: inputs.consistency,
        local_only: matches!((&place, &server_id), (Some(TargetPlace::Directory(d)), Some(s)) if &d.server_id == s),
        server_id,
        target_id: target.as_ref().map(|t| t.name_any()),
        stopped_resources,
        blockers,
    }
}

/// Appaloft's provider key of where a target keeps artifacts (`server-directory` is Berth's:
/// a directory on another registered server).
fn target_provider_key(place: &TargetPlace) -> &'static str {
    match place {
        TargetPlace::Directory(_) => "server-directory",
        TargetPlace::Bucket(_) => "s3-compatible",
    }
}

fn unless_blocked<T>(
    chosen: Result<T, ApiError>,
    code: &str,
    blockers: &mut Vec<BackupPlanBlocker>,
) -> Option<T> {
    match chosen {
        Ok(chosen) => Some(chosen),
        Err(error) => {
            let field = error.body.details.get("field").and_then(|f| f.as_str());
            blockers.push(BackupPlanBlocker {
                code: code.into(),
                message: error.body.message,
                field: field.map(str::to_string),
            });
            None
        }
    }
}

fn blocker(code: &str, message: String, field: &str) -> BackupPlanBlocker {
    BackupPlanBlocker {
        code: code.into(),
        message,
        field: Some(field.into()),
    }
}

/// Why an object's `Ready` condition is not true (it may not have been checked yet).
fn not_ready(conditions: Option<&[Condition]>) -> Option<String> {
    match conditions.and_then(|c| condition::find(c, READY)) {
        Some(ready) if ready.status == ConditionStatus::True => None,
        Some(ready) => Some(format!("not ready: {}", ready.message)),
        None => Some("not checked yet".into()),
    }
}

/// The resources on `server_id` that attach `volume_id`, by id.
fn attaching_on(resources: &[Arc<Resource>], volume_id: &str, server_id: &str) -> Vec<String> {
    let mut names: Vec<String> = resources
        .iter()
        .filter(|r| r.spec.server_id.as_deref() == Some(server_id))
        .filter(|r| {
            r.spec
                .storage_attachments
                .iter()
                .any(|a| a.storage_volume_id == volume_id)
        })
        .map(|r| r.name_any())
        .collect();
    names.sort();
    names
}
