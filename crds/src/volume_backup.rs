//! StorageVolumeBackup and StorageVolumeRestore: one backup of a storage volume's files, and
//! one restore of it. The files are read on the server that holds them (a Docker volume, or a
//! bind-mounted directory) as a tar archive through `docker cp`, sealed by the controller on
//! its way to a BackupTarget exactly as a database's dump is, and proven: the artifact is
//! read back, opened, written into a throwaway volume and read out of it again, and the tree it
//! gives (every path, type, mode, owner, size, content hash and link) must be the one the
//! backup read. Only then is the backup `ready`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use berth_vocabulary::storage::{QuiescedWindow, VolumeConsistency, VolumeRestoreMode};

use crate::backup::{DependencyResourceBackupStatus, DependencyResourceRestoreStatus, PolicySlot};
use crate::limits::{DESCRIPTION_MAX, OBJECT_NAME_MAX};

/// Label on a volume backup naming its storage volume.
pub const STORAGE_VOLUME_LABEL: &str = "berth.dev/storage-volume";
/// Label on a volume restore naming the backup it restores.
pub const VOLUME_BACKUP_LABEL: &str = "berth.dev/storage-volume-backup";

/// One backup of a storage volume's files on one server.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "StorageVolumeBackup",
    namespaced,
    shortname = "bvbackup",
    category = "berth",
    doc = "One backup of a storage volume's files: read as a tar archive on its server, sealed on its way to a BackupTarget and proven by extracting it into a throwaway volume before it is ready.",
    status = "StorageVolumeBackupStatus",
    printcolumn = r#"{"name":"Volume","type":"string","jsonPath":".spec.storageVolumeId"}"#,
    printcolumn = r#"{"name":"Server","type":"string","jsonPath":".spec.serverId"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".spec.targetId"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Files","type":"integer","jsonPath":".status.verification.tree.files"}"#,
    printcolumn = r#"{"name":"Bytes","type":"integer","jsonPath":".status.artifact.bytes"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupSpec {
    /// Id (object name) of the StorageVolume backed up.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub storage_volume_id: String,
    /// Id (object name) of the Server whose copy of the volume is read (a named volume lives
    /// on each server its resources ran on).
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub server_id: String,
    /// Id (object name) of the BackupTarget the artifact goes to.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub target_id: String,
    /// Why it was taken, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = DESCRIPTION_MAX))]
    pub description: Option<String>,
    /// `crash-consistent` (default: read while the application runs) or `quiesced` (the
    /// containers using the volume stopped only while its files are copied on the server into
    /// a snapshot volume, which is then read; the server needs room for that copy).
    #[serde(default)]
    pub consistency: VolumeConsistency,
    /// The policy and slot it was taken for, when a policy took it.
    #[serde(flatten)]
    pub slot: PolicySlot,
}

/// What the controller did and saw: the same record as a database backup's, whose
/// verification counts files, directories and links and names the tree's digest.
pub type StorageVolumeBackupStatus = DependencyResourceBackupStatus;

/// One restore of a ready volume backup: into a new storage volume (its Docker volume made on
/// the backup's server, which must not exist yet), or in place over the volume it was taken
/// of (the containers using it stopped while its files are replaced, then started again).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "StorageVolumeRestore",
    namespaced,
    shortname = "bvrestore",
    category = "berth",
    doc = "One restore of a ready storage volume backup, into a new volume or in place.",
    status = "StorageVolumeRestoreStatus",
    printcolumn = r#"{"name":"Backup","type":"string","jsonPath":".spec.backupId"}"#,
    printcolumn = r#"{"name":"Mode","type":"string","jsonPath":".spec.targetMode"}"#,
    printcolumn = r#"{"name":"Into","type":"string","jsonPath":".spec.targetStorageVolumeId"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Files","type":"integer","jsonPath":".status.report.tree.files"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeRestoreSpec {
    /// Id (object name) of the StorageVolumeBackup restored.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub backup_id: String,
    /// `new-volume`: into `targetStorageVolumeId`, a named volume of the same environment
    /// with no data on the backup's server yet; `in-place`: over the backup's own volume.
    pub target_mode: VolumeRestoreMode,
    /// Id (object name) of the StorageVolume whose files the restore writes.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub target_storage_volume_id: String,
    /// Must be true for `in-place`: the volume's files are replaced and the containers using
    /// it are stopped meanwhile.
    #[serde(default)]
    pub acknowledge_destructive_restore: bool,
}

/// What a volume restore did: the record a database restore writes, whose report counts the
/// files and names the tree's digest.
pub type StorageVolumeRestoreStatus = DependencyResourceRestoreStatus;
