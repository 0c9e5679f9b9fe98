//! Storage volume backups over REST: Appaloft's `POST|GET /storage-volumes/{id}/backups`,
//! `GET /storage-volume-backups/{backupId}` and `POST /storage-volume-backups/{backupId}/restore`
//! with its records (`storageVolumeBackupSummarySchema`), and what Berth adds: the sealed
//! artifact, and the tree (files, directories, links, digest) its test restore read back.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backups::{BackupArtifactSummary, BackupStatus, RestoreStatus};
use crate::limits::{DESCRIPTION_MAX, NAME_MAX, OBJECT_NAME_MAX};
use crate::validate::{Checked, FieldError, optional_text};

pub use berth_vocabulary::storage::{QuiescedWindow, VolumeConsistency, VolumeRestoreMode};

/// `GET /storage-volumes/{id}/backups` answer's `schemaVersion`.
pub const LIST_SCHEMA: &str = "storage-volumes.backups.list/v1";
/// `GET /storage-volume-backups/{backupId}` answer's `schemaVersion`.
pub const SHOW_SCHEMA: &str = "storage-volumes.backups.show/v1";
/// `POST /storage-volumes/{id}/backups/plan` answer's `schemaVersion`.
pub const PLAN_SCHEMA: &str = "storage-volumes.backup-plan/v1";
/// Appaloft's source adapter key of a file-tree backup.
pub const TAR_VOLUME_ADAPTER: &str = "tar-volume";

/// Take a backup of a storage volume's files (Berth's fields; Appaloft's `planRequest` is not
/// taken).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateStorageVolumeBackup {
    /// The server whose copy of the volume is read; when left out, the server of a resource
    /// that attaches the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// The backup target; the organization's only one when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    /// `crash-consistent` (default: the files are read while the application runs) or
    /// `quiesced` (the containers using the volume stopped only while its files are copied on
    /// the server; the copy is read after they run again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_consistency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl CreateStorageVolumeBackup {
    pub fn validate(&self) -> Checked {
        optional_text("serverId", self.server_id.as_ref(), OBJECT_NAME_MAX)?;
        optional_text("targetId", self.target_id.as_ref(), OBJECT_NAME_MAX)?;
        optional_text("description", self.description.as_ref(), DESCRIPTION_MAX)?;
        match self.requested_consistency.as_deref() {
            None => Ok(()),
            Some(text) if VolumeConsistency::parse(text).is_some() => Ok(()),
            Some(_) => Err(FieldError::new(
                "requestedConsistency",
                "requestedConsistency must be crash-consistent or quiesced",
            )),
        }
    }
}

/// What a backup of a volume asked for with the same body would do, and what would stop it
/// (Appaloft's plan, with Berth's choices): nothing is created or changed.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupPlan {
    pub schema_version: String,
    pub storage_volume_id: String,
    /// Only `tar-volume`: the file tree read as a tar archive.
    pub source_adapter_key: String,
    /// `server-directory` or `s3-compatible`; absent when no target could be chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_provider_key: Option<String>,
    pub consistency: VolumeConsistency,
    /// True when the target is a directory on the volume's own server: the backup would not
    /// survive the loss of that server.
    pub local_only: bool,
    /// The server whose copy would be read (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// The target the artifact would go to (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    /// Quiesced: the resources on that server attaching the volume, whose containers would
    /// be stopped while the files are copied (Berth).
    pub stopped_resources: Vec<String>,
    /// Why the backup would not run or could not succeed now; empty when it would.
    pub blockers: Vec<BackupPlanBlocker>,
}

/// One reason a planned backup would not run.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupPlanBlocker {
    /// `server-unresolved`, `server-not-ready`, `target-unresolved` or `target-not-ready`.
    pub code: String,
    pub message: String,
    /// The request field that would fix it, when one would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// Restore a ready volume backup (Appaloft's input).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreStorageVolumeBackup {
    /// `new-volume` (default): a new storage volume of the backup's environment, made on the
    /// backup's server; `in-place`: over the backup's own volume.
    #[serde(default)]
    pub target_mode: VolumeRestoreMode,
    /// The new volume's display name (new-volume); `<source name> restored` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_volume_name: Option<String>,
    /// For in-place: the backup's own volume (the only one allowed), as a check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_storage_volume_id: Option<String>,
    /// Must be true for in-place: the volume's files are replaced and the containers using it
    /// stopped meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledge_destructive_restore: Option<bool>,
}

impl RestoreStorageVolumeBackup {
    pub fn validate(&self) -> Checked {
        optional_text(
            "restoredVolumeName",
            self.restored_volume_name.as_ref(),
            NAME_MAX,
        )?;
        optional_text(
            "targetStorageVolumeId",
            self.target_storage_volume_id.as_ref(),
            OBJECT_NAME_MAX,
        )?;
        match self.target_mode {
            VolumeRestoreMode::InPlace if self.acknowledge_destructive_restore != Some(true) => {
                Err(FieldError::new(
                    "acknowledgeDestructiveRestore",
                    "acknowledgeDestructiveRestore must be true for an in-place restore: the \
                     volume's files are replaced and the containers using it are stopped \
                     meanwhile",
                ))
            }
            VolumeRestoreMode::NewVolume if self.target_storage_volume_id.is_some() => {
                Err(FieldError::new(
                    "targetStorageVolumeId",
                    "targetStorageVolumeId is for in-place restores; a new-volume restore makes \
                     its own volume (name it with restoredVolumeName)",
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Appaloft's restore answer.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RestoredStorageVolume {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_storage_volume_id: Option<String>,
}

/// A volume's file tree (Berth).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeTreeSummary {
    pub files: i64,
    pub directories: i64,
    pub links: i64,
    pub file_bytes: i64,
    /// SHA-256 over every entry's path, type, mode, owner, size, content and link target.
    pub sha256: String,
}

/// Appaloft's `storageVolumeBackupRestoreAttemptSummarySchema`, and Berth's report.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeRestoreAttemptSummary {
    pub attempt_id: String,
    pub status: RestoreStatus,
    pub requested_at: String,
    pub target: VolumeRestoreTarget,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// The tree read back from the volume written (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<VolumeTreeSummary>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeRestoreTarget {
    pub storage_volume_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_volume_id: Option<String>,
    pub destructive_in_place: bool,
}

/// Appaloft's `storageVolumeBackupSummarySchema`, and Berth's additions.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupSummary {
    pub id: String,
    pub storage_volume_id: String,
    pub project_id: String,
    pub environment_id: String,
    /// `named-volume` or `bind-mount`.
    pub storage_volume_kind: String,
    /// `tar-volume`.
    pub source_adapter_key: String,
    /// The server whose copy was read (Berth).
    pub server_id: String,
    /// The backup target (Berth's id; Appaloft's `targetRef`).
    pub target_ref: String,
    /// `crash-consistent` or `quiesced`.
    pub consistency: String,
    /// A quiesced backup's cost (Berth): the containers stopped for the copy, and for how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiesced: Option<QuiescedWindow>,
    /// `pending`, `ready` (stored and proven by extracting it) or `failed`.
    pub status: BackupStatus,
    pub attempt_id: String,
    pub requested_at: String,
    /// `none`: asked for by hand, kept until deleted; `retained`: a policy's, kept by its
    /// rules.
    pub retention_status: String,
    /// False: the artifact is at the target, off the volume's server unless the target is on
    /// it.
    pub local_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_handle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_restore_attempt: Option<VolumeRestoreAttemptSummary>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// While pending: `dumping` (reading the files) or `verifying` (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<BackupArtifactSummary>,
    /// The tree its test restore read back (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<VolumeTreeSummary>,
    /// The policy that took it (Berth; absent for a backup asked for by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
    /// The policy's slot it was taken for (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_for: Option<String>,
    /// True when its slot passed while the controller was away and it was taken on return
    /// (Berth).
    #[serde(default)]
    pub late: bool,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupList {
    pub schema_version: String,
    pub items: Vec<StorageVolumeBackupSummary>,
    pub generated_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupShow {
    pub schema_version: String,
    pub backup: StorageVolumeBackupSummary,
    pub generated_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_in_place_restore_needs_its_acknowledgement_and_a_new_volume_names_no_target() {
        let in_place = |ack: Option<bool>| RestoreStorageVolumeBackup {
            target_mode: VolumeRestoreMode::InPlace,
            acknowledge_destructive_restore: ack,
            ..Default::default()
        };
        assert!(in_place(Some(true)).validate().is_ok());
        for ack in [None, Some(false)] {
            let error = in_place(ack).validate().unwrap_err();
            assert_eq!(error.field, "acknowledgeDestructiveRestore");
        }
        let new = RestoreStorageVolumeBackup {
            target_storage_volume_id: Some("v".into()),
            ..Default::default()
        };
        assert_eq!(new.validate().unwrap_err().field, "targetStorageVolumeId");
        let consistency = |named: &str| CreateStorageVolumeBackup {
            requested_consistency: Some(named.into()),
            ..Default::default()
        };
        assert!(consistency("quiesced").validate().is_ok());
        assert!(consistency("crash-consistent").validate().is_ok());
        assert_eq!(
            consistency("frozen").validate().unwrap_err().field,
            "requestedConsistency"
        );
    }
}
