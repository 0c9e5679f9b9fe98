//! Backups over REST: Appaloft's dependency-resource backup routes and records
//! (`dependencyResourceBackupSummarySchema`), with what Berth adds (the target, the sealed
//! artifact, the test restore that proved it), and Berth's backup targets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dependencies::DependencyKind;
use crate::limits::{DESCRIPTION_MAX, NAME_MAX, OBJECT_NAME_MAX, URL_PATH_MAX};
use crate::validate::{Checked, FieldError, bounded, optional_text};

pub use berth_vocabulary::s3_bucket::S3Bucket;

pub use berth_vocabulary::backups::{
    BACKUP_PROVIDERS, BackupStatus, BackupTargetKind, PG_DUMP_PROVIDER, REDIS_RDB_PROVIDER,
    RestoreStatus, counted_contents, provider_key,
};

/// `GET /dependency-resources/{id}/backups` answer's `schemaVersion`.
pub const LIST_SCHEMA: &str = "dependency-resources.backups.list/v1";
/// `GET /dependency-resources/backups/{backupId}` answer's `schemaVersion`.
pub const SHOW_SCHEMA: &str = "dependency-resources.backups.show/v1";
/// `GET /backup-targets` answer's `schemaVersion`.
pub const TARGETS_LIST_SCHEMA: &str = "backup-targets.list/v1";

/// Appaloft's create-backup input, and the target Berth stores it at.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateDependencyResourceBackup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `berth-sealed-pg-dump` for a PostgreSQL, `berth-sealed-redis-rdb` for a Redis; the
    /// dependency's own when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    /// The backup target (Berth); the organization's only one when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
}

impl CreateDependencyResourceBackup {
    pub fn validate(&self) -> Checked {
        optional_text("description", self.description.as_ref(), DESCRIPTION_MAX)?;
        optional_text("targetId", self.target_id.as_ref(), OBJECT_NAME_MAX)?;
        check_provider(self.provider_key.as_deref())
    }
}

/// The query of an upload of a dump made outside Berth (Berth): the body is the dump's bytes.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UploadDependencyResourceBackup {
    /// The backup target (Berth); the organization's only one when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The uploaded file's name, kept for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
}

impl UploadDependencyResourceBackup {
    /// The query parameters an upload takes.
    pub const PARAMETERS: &[&str] = &["targetId", "description", "fileName"];

    pub fn validate(&self) -> Checked {
        optional_text("description", self.description.as_ref(), DESCRIPTION_MAX)?;
        optional_text("targetId", self.target_id.as_ref(), OBJECT_NAME_MAX)?;
        optional_text("fileName", self.file_name.as_ref(), NAME_MAX)
    }
}

/// A `providerKey` given names one of Berth's backup providers (whether it is the one of the
/// dependency's kind is checked against the dependency).
pub fn check_provider(provider_key: Option<&str>) -> Checked {
    match provider_key {
        Some(key) if !BACKUP_PROVIDERS.contains(&key) => {
            Err(FieldError::not_one_of("providerKey", BACKUP_PROVIDERS))
        }
        _ => Ok(()),
    }
}

/// The sealed artifact of a backup (Berth).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupArtifactSummary {
    pub location: String,
    pub bytes: i64,
    pub sha256: String,
    pub encryption: String,
}

/// What the test restore of a backup found (Berth): a PostgreSQL's tables and rows, a
/// Redis's keys.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupVerificationSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    pub dump_bytes: i64,
    pub seconds: f64,
    pub verified_at: String,
}

/// Appaloft's `dependencyResourceBackupSummarySchema`, and Berth's additions.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceBackupSummary {
    pub id: String,
    pub dependency_resource_id: String,
    pub project_id: String,
    pub environment_id: String,
    pub dependency_kind: DependencyKind,
    pub provider_key: String,
    /// `pending`, `ready` (stored and proven by a test restore) or `failed`.
    pub status: BackupStatus,
    pub attempt_id: String,
    pub requested_at: String,
    /// `retained`: taken by a backup policy, kept while its rules keep it; `none`: asked for
    /// by hand, kept until deleted. Either way the artifact is off the database's server.
    pub retention_status: String,
    /// Where the artifact is, once ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_artifact_handle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    pub created_at: String,
    /// The backup target (Berth).
    pub target_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The backup policy that took it (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
    /// The policy's slot it was taken for (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_for: Option<String>,
    /// True when its slot passed while the controller was away and it was taken on return.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub late: bool,
    /// While pending: `dumping` (`storing-upload` for an uploaded dump) or `verifying` (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What was uploaded, when the backup is a dump made outside Berth (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploaded: Option<UploadedDumpSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<BackupArtifactSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<BackupVerificationSummary>,
    /// The newest restore of this backup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_restore_attempt: Option<RestoreAttemptSummary>,
}

/// A dump made outside Berth as it was uploaded (Berth).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UploadedDumpSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    pub bytes: i64,
    pub sha256: String,
}

/// Appaloft's `dependencyResourceRestoreAttemptSummarySchema`, and Berth's report.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RestoreAttemptSummary {
    pub attempt_id: String,
    /// `pending`, `completed` or `failed` (nothing changed).
    pub status: RestoreStatus,
    pub requested_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_dependency_resource_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// What the target held afterwards (Berth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<RestoreReportSummary>,
}

/// The end report of a restore (Berth).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReportSummary {
    /// A PostgreSQL's tables and rows, a Redis's keys, after the restore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    pub dump_bytes: i64,
    pub seconds: f64,
}

/// Appaloft's restore-backup input: both acknowledgements are required.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreDependencyResourceBackup {
    /// Must be true: the data of the target is replaced by the backup's.
    #[serde(default)]
    pub acknowledge_data_overwrite: bool,
    /// Must be true: the apps bound to the target are not restarted.
    #[serde(default)]
    pub acknowledge_runtime_not_restarted: bool,
    /// Another database of the backup's kind, project and environment to restore into (a
    /// clone); the backup's own when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_dependency_resource_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_label: Option<String>,
}

impl RestoreDependencyResourceBackup {
    pub fn validate(&self) -> Checked {
        let must = |field: &str, given: bool, why: &str| {
            if given {
                Ok(())
            } else {
                Err(FieldError::new(
                    field,
                    format!("{field} must be true: {why}"),
                ))
            }
        };
        must(
            "acknowledgeDataOverwrite",
            self.acknowledge_data_overwrite,
            "the target's data is replaced by the backup's",
        )?;
        must(
            "acknowledgeRuntimeNotRestarted",
            self.acknowledge_runtime_not_restarted,
            "the apps bound to the target are not restarted",
        )?;
        optional_text(
            "targetDependencyResourceId",
            self.target_dependency_resource_id.as_ref(),
            OBJECT_NAME_MAX,
        )?;
        optional_text("restoreLabel", self.restore_label.as_ref(), NAME_MAX)
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceBackupList {
    pub schema_version: String,
    pub items: Vec<DependencyResourceBackupSummary>,
    pub generated_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceBackupShow {
    pub schema_version: String,
    pub backup: DependencyResourceBackupSummary,
    pub generated_at: String,
}

/// `POST /backup-targets` (Berth): a directory on a registered server, or a bucket of an
/// S3-compatible store.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateBackupTarget {
    pub name: String,
    /// `server-directory` (the default) or `s3`.
    #[serde(default)]
    pub kind: BackupTargetKind,
    /// For `server-directory`: the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// For `server-directory`: an absolute directory on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For `s3`: the bucket and the keys to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<CreateS3Target>,
}

/// A bucket and its keys. The keys are kept in a Secret of the organization that the target
/// owns; they are never answered back.
// Nor printed: `Debug` masks the secret key.
#[derive(Serialize, Deserialize, JsonSchema, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CreateS3Target {
    #[serde(flatten)]
    pub bucket: S3Bucket,
    pub access_key_id: String,
    pub secret_access_key: String,
}

impl std::fmt::Debug for CreateS3Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateS3Target")
            .field("bucket", &self.bucket)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"****")
            .finish()
    }
}

/// The longest access key id or secret key taken.
const S3_KEY_MAX: usize = 256;

impl CreateBackupTarget {
    pub fn validate(&self) -> Checked {
        bounded("name", &self.name, NAME_MAX)?;
        match self.kind {
            BackupTargetKind::ServerDirectory => self.validate_directory(),
            BackupTargetKind::S3 => self.validate_s3(),
        }
    }

    fn validate_directory(&self) -> Checked {
        if self.s3.is_some() {
            return Err(FieldError::new("s3", "s3 is only for kind s3"));
        }
        let server_id = self.server_id.as_deref().unwrap_or_default();
        bounded("serverId", server_id, OBJECT_NAME_MAX)?;
        let path = self.path.as_deref().unwrap_or_default();
        bounded("path", path, URL_PATH_MAX)?;
        let plain = path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
        if !path.starts_with('/') || path.len() < 2 || !plain {
            return Err(FieldError::new(
                "path",
                "path must be an absolute directory of letters, digits, '.', '_', '-' and '/'",
            ));
        }
        Ok(())
    }

    fn validate_s3(&self) -> Checked {
        for (field, given) in [("serverId", &self.server_id), ("path", &self.path)] {
            if given.is_some() {
                let why = format!("{field} is only for kind server-directory");
                return Err(FieldError::new(field, why));
            }
        }
        let Some(s3) = &self.s3 else {
            return Err(FieldError::new(
                "s3",
                "kind s3 needs s3 (endpoint, bucket, keys)",
            ));
        };
        if let Some((field, why)) = s3.bucket.problem() {
            return Err(FieldError::new(&format!("s3.{field}"), why));
        }
        bounded("s3.accessKeyId", &s3.access_key_id, S3_KEY_MAX)?;
        bounded("s3.secretAccessKey", &s3.secret_access_key, S3_KEY_MAX)
    }
}

/// One backup target as listed.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupTargetSummary {
    pub id: String,
    pub name: String,
    pub kind: BackupTargetKind,
    /// For `server-directory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For `s3` (its keys are never shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Bucket>,
    /// Whether a probe could be written and removed there when last checked.
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_message: Option<String>,
    pub created_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BackupTargetList {
    pub schema_version: String,
    pub items: Vec<BackupTargetSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_names_only_berths_provider_and_a_target_an_absolute_plain_path() {
        let create = |provider: Option<&str>| CreateDependencyResourceBackup {
            provider_key: provider.map(str::to_string),
            ..Default::default()
        };
        assert!(create(None).validate().is_ok());
        assert!(create(Some(PG_DUMP_PROVIDER)).validate().is_ok());
        assert!(create(Some(REDIS_RDB_PROVIDER)).validate().is_ok());
        assert_eq!(
            create(Some("s3")).validate().unwrap_err().field,
            "providerKey"
        );
        let target = |path: &str| CreateBackupTarget {
            name: "Offsite".into(),
            kind: BackupTargetKind::ServerDirectory,
            server_id: Some("srv".into()),
            path: Some(path.into()),
            s3: None,
        };
        assert!(target("/var/backups").validate().is_ok());
        for bad in ["relative", "/", "/a b", "/x;rm"] {
            assert_eq!(target(bad).validate().unwrap_err().field, "path", "{bad}");
        }
    }

    #[test]
    fn an_s3_target_needs_its_bucket_and_keys_and_nothing_of_a_directory() {
        let s3 = CreateS3Target {
            bucket: S3Bucket {
                endpoint: "http://127.0.0.1:3900".into(),
                bucket: "berth-backups".into(),
                region: "garage".into(),
                path_style: true,
                prefix: None,
            },
            access_key_id: "GK1".into(),
            secret_access_key: "wJalrXUt-test-key".into(),
        };
        let target = |s3: Option<CreateS3Target>| CreateBackupTarget {
            name: "Bucket".into(),
            kind: BackupTargetKind::S3,
            s3,
            ..Default::default()
        };
        assert!(target(Some(s3.clone())).validate().is_ok());
        assert_eq!(target(None).validate().unwrap_err().field, "s3");
        let with_path = CreateBackupTarget {
            path: Some("/x".into()),
            ..target(Some(s3.clone()))
        };
        assert_eq!(with_path.validate().unwrap_err().field, "path");
        let mut bad = s3.clone();
        bad.bucket.bucket = "No_Such".into();
        assert_eq!(target(Some(bad)).validate().unwrap_err().field, "s3.bucket");
        assert!(!format!("{s3:?}").contains("wJalrXUt"), "the key is masked");
        let mut empty = s3;
        empty.secret_access_key = String::new();
        assert_eq!(
            target(Some(empty)).validate().unwrap_err().field,
            "s3.secretAccessKey"
        );
    }
}
