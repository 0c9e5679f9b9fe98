//! Storage volume backup policies over REST: Appaloft's
//! `storage-volumes.backup-policies.configure|list|show` routes, with Berth's fields (those of
//! a database's policy: a cron schedule or an interval, retention by count, day and week, the
//! target, the newest proven restore point) rather than Appaloft's `planRequest`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backup_policies::{
    POLICY_VERSION, PolicyBackupSummary, PolicyTiming, VerifiedBackupSummary,
};
use crate::limits::OBJECT_NAME_MAX;
use crate::validate::{Checked, FieldError, bounded, optional_text};
use crate::volume_backups::VolumeConsistency;

/// A policy record's `schemaVersion`.
pub const POLICY_SCHEMA: &str = "storage-volume-backup-policies.policy/v1";
/// `GET /storage-volumes/backup-policies` answer's `schemaVersion`.
pub const LIST_SCHEMA: &str = "storage-volume-backup-policies.list/v1";
/// `GET /storage-volumes/backup-policies/{policyId}` answer's `schemaVersion`.
pub const SHOW_SCHEMA: &str = "storage-volume-backup-policies.show/v1";

/// `POST /storage-volumes/backup-policies`: creates the volume's policy, or changes the one
/// named by `policyId` (else the volume's existing one) in the fields given.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigureStorageVolumeBackupPolicy {
    /// The policy to change; the volume's own when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
    /// Only `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub storage_volume_id: String,
    /// Whether slots take backups (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_enabled: Option<bool>,
    /// Back up every this many hours (1 to 8760), counted from the Unix epoch. Give this or
    /// `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_interval_hours: Option<i64>,
    /// Only true: a backup whose server cannot be reached is tried again for 15 minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on_failure: Option<bool>,
    /// Berth: a five-field cron pattern or `@daily`-style name, read in `timezone`. Give this
    /// or `scheduleIntervalHours`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Berth: the IANA zone `schedule` is read in (default UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Berth: keep every backup younger than this many days (1 to 3650).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<i64>,
    /// Berth: keep the newest this many (1 to 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_last: Option<i64>,
    /// Berth: keep the newest of each of the last this many days (1 to 366).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_daily: Option<i64>,
    /// Berth: keep the newest of each of the last this many ISO weeks (1 to 520).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_weekly: Option<i64>,
    /// Berth: the backup target; the organization's only one when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    /// Berth: the server whose copy of the volume is read; when left out, the server of a
    /// resource that attaches the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// Berth: `crash-consistent` (default) or `quiesced` (the containers using the volume
    /// stopped only while its files are copied on the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_consistency: Option<String>,
}

impl ConfigureStorageVolumeBackupPolicy {
    /// The fields on their own; whether a schedule is given at all depends on whether the
    /// policy exists ([`Self::check_new`]).
    pub fn validate(&self) -> Checked {
        optional_text("policyId", self.policy_id.as_ref(), OBJECT_NAME_MAX)?;
        if self.version.as_deref().is_some_and(|v| v != POLICY_VERSION) {
            return Err(FieldError::not_one_of("version", &[POLICY_VERSION]));
        }
        bounded("storageVolumeId", &self.storage_volume_id, OBJECT_NAME_MAX)?;
        optional_text("targetId", self.target_id.as_ref(), OBJECT_NAME_MAX)?;
        optional_text("serverId", self.server_id.as_ref(), OBJECT_NAME_MAX)?;
        if self.retry_on_failure == Some(false) {
            return Err(FieldError::new(
                "retryOnFailure",
                "retryOnFailure can only be true: Berth always tries a backup again while its \
                 server cannot be reached (for 15 minutes)",
            ));
        }
        self.consistency()?;
        self.timing().check()
    }

    /// The consistency asked for (`None` when not given), or why it names none.
    pub fn consistency(&self) -> Result<Option<VolumeConsistency>, FieldError> {
        match self.requested_consistency.as_deref() {
            None => Ok(None),
            Some(text) => VolumeConsistency::parse(text).map(Some).ok_or_else(|| {
                FieldError::new(
                    "requestedConsistency",
                    "requestedConsistency must be crash-consistent or quiesced",
                )
            }),
        }
    }

    pub fn timing(&self) -> PolicyTiming<'_> {
        PolicyTiming {
            schedule: self.schedule.as_deref(),
            timezone: self.timezone.as_deref(),
            interval_hours: self.schedule_interval_hours,
            retention_days: self.retention_days,
            keep_last: self.keep_last,
            keep_daily: self.keep_daily,
            keep_weekly: self.keep_weekly,
        }
    }
}

/// One volume backup policy (Appaloft's record's names where it has them).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupPolicySummary {
    pub schema_version: String,
    pub id: String,
    pub version: String,
    pub storage_volume_id: String,
    pub scheduled_enabled: bool,
    /// Hours between backups (absent for a cron schedule).
    pub schedule_interval_hours: Option<i64>,
    pub retry_on_failure: bool,
    /// When the newest backup was asked for.
    pub last_run_at: Option<String>,
    /// When the next backup is due (absent while disabled or not ready).
    pub next_run_at: Option<String>,
    /// `never`, `succeeded` (the newest backup is ready), `failed`, or `pending` (Berth).
    pub last_status: String,
    pub last_backup_id: Option<String>,
    pub updated_at: String,
    pub server_id: String,
    pub target_id: String,
    pub consistency: VolumeConsistency,
    pub schedule: Option<String>,
    pub timezone: String,
    pub retention_days: Option<i64>,
    pub keep_last: Option<i64>,
    pub keep_daily: Option<i64>,
    pub keep_weekly: Option<i64>,
    /// Ready backups the rules keep.
    pub backups_kept: i64,
    pub latest_backup: Option<PolicyBackupSummary>,
    /// The restore point to count on.
    pub last_verified_backup: Option<VerifiedBackupSummary>,
    /// The policy's `Ready` condition: false when its newest backup failed, its schedule
    /// cannot be read, or its volume or target is gone.
    pub ready: bool,
    pub message: Option<String>,
    pub created_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupPolicyList {
    pub schema_version: String,
    pub items: Vec<StorageVolumeBackupPolicySummary>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupPolicyShow {
    pub schema_version: String,
    pub policy: StorageVolumeBackupPolicySummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configure() -> ConfigureStorageVolumeBackupPolicy {
        ConfigureStorageVolumeBackupPolicy {
            storage_volume_id: "uploads".into(),
            schedule_interval_hours: Some(24),
            ..Default::default()
        }
    }

    fn refused(change: impl FnOnce(&mut ConfigureStorageVolumeBackupPolicy)) -> String {
        let mut body = configure();
        change(&mut body);
        body.validate().unwrap_err().field
    }

    #[test]
    fn a_refusal_names_the_field() {
        assert!(configure().validate().is_ok());
        assert_eq!(
            refused(|b| b.requested_consistency = Some("frozen".into())),
            "requestedConsistency"
        );
        assert_eq!(refused(|b| b.keep_last = Some(0)), "keepLast");
        assert_eq!(
            refused(|b| {
                b.schedule_interval_hours = None;
                b.schedule = Some("every day".into());
            }),
            "schedule"
        );
        assert_eq!(refused(|b| b.storage_volume_id.clear()), "storageVolumeId");
        assert_eq!(
            refused(|b| b.retry_on_failure = Some(false)),
            "retryOnFailure"
        );
        let bare = ConfigureStorageVolumeBackupPolicy {
            storage_volume_id: "uploads".into(),
            ..Default::default()
        };
        assert_eq!(
            bare.timing().check_new().unwrap_err().field,
            "scheduleIntervalHours"
        );
    }
}
