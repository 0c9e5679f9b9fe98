//! Storage volume backups as REST shows them: a StorageVolumeBackup object as Appaloft's
//! backup record (with Berth's server, artifact and tree), its restores as restore attempts,
//! and which server a backup reads when the request names none.

use std::sync::Arc;

use berth_api::backups::{BackupArtifactSummary, BackupStatus};
use berth_api::volume_backups::{
    StorageVolumeBackupSummary, TAR_VOLUME_ADAPTER, VolumeRestoreAttemptSummary, VolumeRestoreMode,
    VolumeRestoreTarget, VolumeTreeSummary,
};
use berth_crds::backup::VolumeTree;
use berth_crds::resource::Resource;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::volume_backup::{StorageVolumeBackup, StorageVolumeRestore};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

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
        retention_status: "none".into(),
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
