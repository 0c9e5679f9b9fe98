//! BackupTarget and DependencyResourceBackup: where an organization's backups go, and one
//! backup of a managed database. A backup is a dump taken in the database's own container,
//! sealed (encrypted, framed, checksummed) by the controller on its way to the target, and
//! then proven: downloaded, opened, checked against its checksum and restored into a throwaway
//! container whose tables and rows (PostgreSQL) or keys (Redis) are counted. Only then is it
//! `ready`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use berth_vocabulary::backups::{
    BackupStatus, BackupTargetKind, PG_DUMP_PROVIDER, REDIS_RDB_PROVIDER, RestoreStatus,
    counted_contents, provider_key,
};

pub use berth_vocabulary::storage::QuiescedWindow;

pub use berth_vocabulary::s3_bucket::{
    ACCESS_KEY_ID_FIELD, DEFAULT_REGION, S3Bucket, SECRET_ACCESS_KEY_FIELD,
};

use crate::Condition;
use crate::limits::{DESCRIPTION_MAX, NAME_MAX, OBJECT_NAME_MAX, URL_PATH_MAX};

/// The Secret of an organization's namespace holding its backup key (`key`: 32 random bytes,
/// made by the controller on the first backup). Losing it loses every backup sealed with it.
pub const BACKUP_KEY_SECRET: &str = "berth-backup-key";
/// The key of [`BACKUP_KEY_SECRET`] holding the key.
pub const BACKUP_KEY_FIELD: &str = "key";
/// How artifacts are sealed, as their records name it.
pub const ENCRYPTION: &str = "aes-256-gcm-framed/v1";
/// Label on a backup naming its dependency resource.
pub const DEPENDENCY_LABEL: &str = "berth.dev/dependency-resource";
/// Held by a backup while its artifact may be at its target: deleting the backup (by hand, by
/// a policy's pruning, with its database or organization) removes the artifact first.
pub const ARTIFACT_FINALIZER: &str = "berth.dev/backup-artifact";

/// Where backups are kept.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "BackupTarget",
    namespaced,
    shortname = "btarget",
    category = "berth",
    doc = "Where an organization's backups are kept: a directory on a registered server, or a bucket of an S3-compatible store.",
    status = "BackupTargetStatus",
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.kind"}"#,
    printcolumn = r#"{"name":"Server","type":"string","jsonPath":".spec.serverDirectory.serverId"}"#,
    printcolumn = r#"{"name":"Path","type":"string","jsonPath":".spec.serverDirectory.path"}"#,
    printcolumn = r#"{"name":"Bucket","type":"string","jsonPath":".spec.s3.bucket"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BackupTargetSpec {
    /// A name for people.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// `server-directory`: a directory on a registered Server, written over the SSH connection
    /// Berth already holds; `s3`: a bucket of an S3-compatible store.
    pub kind: BackupTargetKind,
    /// Where, for `server-directory` (and only for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_directory: Option<ServerDirectory>,
    /// Where, for `s3` (and only for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Target>,
}

/// A bucket and the Secret holding the keys to it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct S3Target {
    #[serde(flatten)]
    pub bucket: S3Bucket,
    /// A Secret of the target's namespace with the keys `accessKeyId` and `secretAccessKey`.
    pub credentials_secret_ref: CredentialsSecretRef,
}

/// A Secret in the target's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsSecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub name: String,
}

/// Where a target keeps artifacts, once its spec is known to be whole.
#[derive(Clone, Copy, Debug)]
pub enum TargetPlace<'a> {
    Directory(&'a ServerDirectory),
    Bucket(&'a S3Target),
}

impl BackupTargetSpec {
    /// Where it keeps artifacts, or what the schema cannot refuse (Kubernetes 1.20 has no CEL),
    /// naming the field.
    pub fn place(&self) -> Result<TargetPlace<'_>, String> {
        match (self.kind, &self.server_directory, &self.s3) {
            (BackupTargetKind::ServerDirectory, Some(directory), None) => {
                Ok(TargetPlace::Directory(directory))
            }
            (BackupTargetKind::S3, None, Some(s3)) => match s3.bucket.problem() {
                Some((field, why)) => Err(format!("spec.s3.{field}: {why}")),
                None => Ok(TargetPlace::Bucket(s3)),
            },
            (BackupTargetKind::ServerDirectory, _, _) => {
                Err("kind server-directory needs spec.serverDirectory and no spec.s3".to_string())
            }
            (BackupTargetKind::S3, _, _) => {
                Err("kind s3 needs spec.s3 and no spec.serverDirectory".to_string())
            }
        }
    }
}

/// What the controller found when it last checked the target.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupTargetStatus {
    /// Generation of the spec last checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` when the directory exists (made when missing) or the bucket answers, and a probe
    /// could be written and removed there, as checked
    /// when the target was created or changed (a failing check is retried every minute).
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// A directory on a registered Server.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerDirectory {
    /// Id (object name) of the Server.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub server_id: String,
    /// Absolute directory; artifacts go under `<path>/<namespace>/<dependency>/`.
    #[schemars(length(min = 2, max = URL_PATH_MAX), regex(pattern = r"^/[A-Za-z0-9._/-]+$"))]
    pub path: String,
}

/// One backup of a managed dependency resource (PostgreSQL or Redis).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "DependencyResourceBackup",
    namespaced,
    shortname = "bbackup",
    category = "berth",
    doc = "One backup of a managed database: sealed on its way to a BackupTarget and proven by a test restore before it is ready.",
    status = "DependencyResourceBackupStatus",
    printcolumn = r#"{"name":"Dependency","type":"string","jsonPath":".spec.dependencyResourceId"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".spec.targetId"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Tables","type":"integer","jsonPath":".status.verification.tables"}"#,
    printcolumn = r#"{"name":"Rows","type":"integer","jsonPath":".status.verification.rows"}"#,
    printcolumn = r#"{"name":"Keys","type":"integer","jsonPath":".status.verification.keys"}"#,
    printcolumn = r#"{"name":"Bytes","type":"integer","jsonPath":".status.artifact.bytes"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceBackupSpec {
    /// Id (object name) of the DependencyResource backed up.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub dependency_resource_id: String,
    /// Id (object name) of the BackupTarget the artifact goes to.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub target_id: String,
    /// Why it was taken, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = DESCRIPTION_MAX))]
    pub description: Option<String>,
    /// The policy and slot it was taken for, when a policy took it.
    #[serde(flatten)]
    pub slot: PolicySlot,
    /// A dump made outside Berth and uploaded: the backup stores and proves it in place of a
    /// dump of the database (which is left alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploaded: Option<UploadedDump>,
}

/// A `pg_dump -Fc` archive uploaded through the API. It waits on the database's server, at
/// [`upload_path`], until its backup has stored it sealed at the target; then it is removed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadedDump {
    /// Its size as uploaded.
    #[schemars(range(min = 1))]
    pub bytes: i64,
    /// The SHA-256 of its bytes as uploaded (hex); the backup refuses a file that differs.
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub sha256: String,
    /// The file's name as the uploader gave it, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub file_name: Option<String>,
}

/// Where an uploaded dump waits on its database's server, relative to the SSH user's home:
/// named by its backup alone, so no object can point the controller at another file.
pub fn upload_path(namespace: &str, backup: &str) -> String {
    format!("{UPLOAD_DIRECTORY}/{namespace}.{backup}.dump")
}

/// The directory of [`upload_path`].
pub const UPLOAD_DIRECTORY: &str = ".berth/uploads";

/// How a PostgreSQL custom-format archive (`pg_dump -Fc`) starts.
pub const PG_CUSTOM_DUMP_MAGIC: &[u8] = b"PGDMP";

/// The policy slot a backup was taken for. A backup asked for by hand has none and is kept
/// until deleted; a policy's backups are kept by the policy's rules.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicySlot {
    /// Id of the backup policy that took it (its rules decide how long it is kept); absent for
    /// a backup asked for by hand, kept until deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub policy_id: Option<String>,
    /// The policy's slot it was taken for (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub scheduled_for: Option<String>,
    /// True when its slot passed while the controller was away and it was taken on return.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub late: bool,
}

/// What the controller did and saw.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceBackupStatus {
    /// `pending`, `ready` or `failed`.
    #[serde(default)]
    pub status: BackupStatus,
    /// While pending: `dumping` or `verifying`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The database's kind (`postgres` or `redis`); absent for a storage volume's backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<Time>,
    /// Why it failed, as a code (`dump-failed`, `upload-failed`, `verification-failed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    /// Why it failed, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// The sealed artifact at the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<BackupArtifact>,
    /// What the test restore found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<BackupVerification>,
    /// A quiesced volume backup: the containers stopped for the copy, and for how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiesced: Option<QuiescedWindow>,
    /// `Ready` once verified.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// A sealed artifact.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupArtifact {
    /// Where it is: `server-directory://<server>/<path>`.
    pub location: String,
    /// Its size at the target.
    pub bytes: i64,
    /// SHA-256 of the artifact as stored (hex).
    pub sha256: String,
    /// How it is sealed ([`ENCRYPTION`]).
    pub encryption: String,
}

/// The test restore of an artifact: for a PostgreSQL, its tables and rows; for a Redis, its
/// keys.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupVerification {
    /// PostgreSQL: tables restored (every schema but the system ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<i64>,
    /// PostgreSQL: rows in them, counted one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<i64>,
    /// Redis: keys loaded, over every logical database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    /// Storage volume: the tree the throwaway volume gave back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<VolumeTree>,
    /// Bytes of the dump (a volume's tar archive) inside the artifact.
    pub dump_bytes: i64,
    /// Seconds the download, restore and count took.
    pub seconds: f64,
    pub verified_at: Time,
}

/// A storage volume's file tree as a backup read it or a restore wrote it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeTree {
    /// Regular files (hard links included).
    pub files: i64,
    /// Directories, the root's own not counted.
    pub directories: i64,
    /// Symbolic links.
    pub links: i64,
    /// Bytes in the regular files.
    pub file_bytes: i64,
    /// SHA-256 (hex) over every entry's path, type, mode, owner, size, content hash and link
    /// target, sorted by path: equal trees, equal digests.
    pub sha256: String,
}

/// Label on a restore naming the backup it restores.
pub const BACKUP_LABEL: &str = "berth.dev/backup";

/// One restore of a ready backup into a managed database of its kind: its own (in place) or
/// another of the same project and environment (a clone). A PostgreSQL's runs in one
/// transaction: it lands whole or changes nothing. A Redis takes the backup's snapshot as a
/// replica of a throwaway server holding it, then is a primary again: it changes nothing
/// unless the snapshot arrived whole.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "DependencyResourceRestore",
    namespaced,
    shortname = "brestore",
    category = "berth",
    doc = "One restore of a ready backup into a managed PostgreSQL or Redis (in place or into another of its kind).",
    status = "DependencyResourceRestoreStatus",
    printcolumn = r#"{"name":"Backup","type":"string","jsonPath":".spec.backupId"}"#,
    printcolumn = r#"{"name":"Into","type":"string","jsonPath":".spec.targetDependencyResourceId"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Rows","type":"integer","jsonPath":".status.report.rows"}"#,
    printcolumn = r#"{"name":"Keys","type":"integer","jsonPath":".status.report.keys"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceRestoreSpec {
    /// Id (object name) of the DependencyResourceBackup restored.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub backup_id: String,
    /// Id (object name) of the DependencyResource whose data is replaced: the backup's own, or
    /// another of its kind in the same project and environment.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub target_dependency_resource_id: String,
    /// Must be true: the target's data is replaced (a PostgreSQL's objects the dump holds
    /// dropped and recreated; a Redis's whole keyspace).
    pub acknowledge_data_overwrite: bool,
    /// A label for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub restore_label: Option<String>,
}

/// What a restore did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceRestoreStatus {
    /// `pending`, `completed` or `failed`.
    #[serde(default)]
    pub status: RestoreStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<Time>,
    /// Why it failed, as a code (`dependency-resource-backup-blocked`, `restore-failed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    /// Why it failed, in one line (whether anything was changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// What the target holds after the restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<RestoreReport>,
    /// `Ready` once completed.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// The end report of a restore.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReport {
    /// PostgreSQL: tables in the target database after the restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<i64>,
    /// PostgreSQL: rows in them, counted one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<i64>,
    /// Redis: keys the target holds after the restore, over every logical database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    /// Storage volume: the tree read back from the target volume after the restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<VolumeTree>,
    /// Bytes of the dump restored.
    pub dump_bytes: i64,
    /// Seconds the download, restore and count took.
    pub seconds: f64,
}
