//! DependencyResourceBackupPolicy and StorageVolumeBackupPolicy: backups of a managed database
//! or of a storage volume taken on a schedule and kept by rules. Each slot's backup (a
//! DependencyResourceBackup or a StorageVolumeBackup) is named by the policy and the slot,
//! so the API server's name uniqueness makes each slot back up once across controller restarts
//! and failovers; a slot that passed while the controller was away is backed up once, late.
//! Backups the rules no longer keep are deleted, and their artifacts with them.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use berth_vocabulary::backups::{
    KEEP_DAILY_MAX, KEEP_DAYS_MAX, KEEP_LAST_MAX, KEEP_WEEKLY_MAX,
};
pub use berth_vocabulary::scheduled_tasks::{INTERVAL_HOURS_MAX, Schedule, ScheduleProblem};

use crate::Condition;
use crate::backup::BackupStatus;
use crate::limits::OBJECT_NAME_MAX;
use crate::volume_backup::VolumeConsistency;

/// Label on a backup naming the policy that took it.
pub const POLICY_LABEL: &str = "berth.dev/backup-policy";
/// Annotation that lets a deletion go without the final backup a database or volume with a
/// backup policy gets first: its value must be the object's name, typed out.
pub const SKIP_FINAL_BACKUP_ANNOTATION: &str = "berth.dev/skip-final-backup";
/// Backups kept when a policy gives no rule.
pub const DEFAULT_KEEP_LAST: i64 = 7;
/// Failed backups of a policy kept as a record, the newest; older ones are deleted.
pub const FAILED_KEPT: usize = 5;

/// The name of the backup a policy takes for `slot` (Unix seconds).
pub fn slot_backup_name(policy: &str, slot: i64) -> String {
    format!("{policy}-{slot}")
}

/// Backups of one managed database on a schedule, kept by rules.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "DependencyResourceBackupPolicy",
    namespaced,
    shortname = "bbpolicy",
    category = "berth",
    doc = "Backups of a managed database taken on a schedule (each proven by a test restore) and kept by retention rules; older ones are pruned at the target.",
    status = "BackupPolicyStatus",
    printcolumn = r#"{"name":"Dependency","type":"string","jsonPath":".spec.dependencyResourceId"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".spec.targetId"}"#,
    printcolumn = r#"{"name":"Next Run","type":"string","jsonPath":".status.nextRunAt"}"#,
    printcolumn = r#"{"name":"Last Verified","type":"string","jsonPath":".status.lastVerified.verifiedAt"}"#,
    printcolumn = r#"{"name":"Kept","type":"integer","jsonPath":".status.backupsKept"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DependencyResourceBackupPolicySpec {
    /// Id (object name) of the DependencyResource backed up (a managed PostgreSQL or Redis).
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub dependency_resource_id: String,
    /// Id (object name) of the BackupTarget the backups go to.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub target_id: String,
    /// When it backs up and which backups it keeps.
    #[serde(flatten)]
    pub rules: PolicyRules,
}

/// Backups of one storage volume's files on one server on a schedule, kept by rules.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "StorageVolumeBackupPolicy",
    namespaced,
    shortname = "bvpolicy",
    category = "berth",
    doc = "Backups of a storage volume's files taken on a schedule (each proven by extracting it into a throwaway volume) and kept by retention rules; older ones are pruned at the target.",
    status = "BackupPolicyStatus",
    printcolumn = r#"{"name":"Volume","type":"string","jsonPath":".spec.storageVolumeId"}"#,
    printcolumn = r#"{"name":"Server","type":"string","jsonPath":".spec.serverId"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".spec.targetId"}"#,
    printcolumn = r#"{"name":"Next Run","type":"string","jsonPath":".status.nextRunAt"}"#,
    printcolumn = r#"{"name":"Last Verified","type":"string","jsonPath":".status.lastVerified.verifiedAt"}"#,
    printcolumn = r#"{"name":"Kept","type":"integer","jsonPath":".status.backupsKept"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct StorageVolumeBackupPolicySpec {
    /// Id (object name) of the StorageVolume backed up.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub storage_volume_id: String,
    /// Id (object name) of the Server whose copy of the volume is read.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub server_id: String,
    /// Id (object name) of the BackupTarget the backups go to.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub target_id: String,
    /// How each backup reads the files: `crash-consistent` (default) or `quiesced` (the
    /// containers using the volume stopped only while its files are copied on the server).
    #[serde(default)]
    pub consistency: VolumeConsistency,
    /// When it backs up and which backups it keeps.
    #[serde(flatten)]
    pub rules: PolicyRules,
}

/// When a backup policy backs up and which backups it keeps: the same rules for a database's
/// policy and a volume's.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRules {
    /// When to back up: a five-field cron pattern or `@hourly`, `@daily`, `@weekly`,
    /// `@monthly`, `@yearly`, read in `timezone`. Give this or `intervalHours`, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 120))]
    pub schedule: Option<String>,
    /// IANA time zone `schedule` is read in, daylight-saving changes included; default UTC.
    #[serde(default = "default_timezone")]
    #[schemars(length(min = 1, max = 64))]
    pub timezone: String,
    /// Back up every this many hours (1 to 8760), counted from the Unix epoch: every 6 hours
    /// is at 00:00, 06:00, 12:00 and 18:00 UTC. Give this or `schedule`, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = INTERVAL_HOURS_MAX))]
    pub interval_hours: Option<i64>,
    /// Which ready backups are kept; the rest are deleted with their artifacts.
    #[serde(default)]
    pub retention: BackupRetention,
    /// Whether slots take backups (default true). A disabled policy's slots pass without one;
    /// its backups are still kept by its rules.
    #[serde(default = "crate::common::default_true")]
    pub enabled: bool,
}

impl Default for PolicyRules {
    fn default() -> Self {
        Self {
            schedule: None,
            timezone: default_timezone(),
            interval_hours: None,
            retention: BackupRetention::default(),
            enabled: true,
        }
    }
}

fn default_timezone() -> String {
    crate::scheduled_task::DEFAULT_TIMEZONE.to_string()
}

impl PolicyRules {
    /// When the policy backs up, or why that cannot be read (naming the field).
    pub fn parsed_schedule(&self) -> Result<Schedule, ScheduleProblem> {
        match (&self.schedule, self.interval_hours) {
            (Some(schedule), None) => Schedule::parse(schedule, &self.timezone),
            (None, Some(hours)) => Schedule::every_hours(hours),
            (Some(_), Some(_)) => Err(ScheduleProblem {
                field: "intervalHours",
                message: "give schedule or intervalHours, not both".into(),
            }),
            (None, None) => Err(ScheduleProblem {
                field: "schedule",
                message: "give schedule (cron) or intervalHours".into(),
            }),
        }
    }
}

/// Which ready backups a policy keeps: a backup is kept when any rule keeps it. A policy with no
/// rule keeps the newest 7. The newest ready backup is always kept. Pending backups are never
/// deleted; of the failed ones the newest 5 are kept as a record.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupRetention {
    /// The newest this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = KEEP_LAST_MAX))]
    pub keep_last: Option<i64>,
    /// Every one younger than this many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = KEEP_DAYS_MAX))]
    pub keep_days: Option<i64>,
    /// The newest of each of the last this many days (UTC) that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = KEEP_DAILY_MAX))]
    pub keep_daily: Option<i64>,
    /// The newest of each of the last this many ISO weeks that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = KEEP_WEEKLY_MAX))]
    pub keep_weekly: Option<i64>,
}

impl BackupRetention {
    /// The rules in force: the spec's, or keep the newest [`DEFAULT_KEEP_LAST`].
    pub fn effective(&self) -> Self {
        if self == &Self::default() {
            Self {
                keep_last: Some(DEFAULT_KEEP_LAST),
                ..Self::default()
            }
        } else {
            self.clone()
        }
    }
}

/// What the controller observed about a backup policy (of a database or of a volume).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupPolicyStatus {
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the next backup is due (RFC 3339); absent while disabled or not ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
    /// The last slot handled (RFC 3339): slots after it and before now were missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_slot: Option<String>,
    /// When the newest backup of the policy was asked for (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<String>,
    /// The newest backup of the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_backup: Option<PolicyBackup>,
    /// The newest backup proven by a test restore: the restore point to count on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verified: Option<VerifiedBackup>,
    /// Ready backups kept by the rules, after the last pruning.
    #[serde(default)]
    pub backups_kept: i64,
    /// `Ready` while the schedule is valid, what it backs up and its target exist and the
    /// newest backup did not fail (`BackupFailed` says why it did).
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// A backup of a policy, as its status names it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyBackup {
    /// Name of the backup (a DependencyResourceBackup or a StorageVolumeBackup).
    pub name: String,
    pub status: BackupStatus,
}

/// The newest proven backup of a policy.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedBackup {
    /// Name of the backup (a DependencyResourceBackup or a StorageVolumeBackup).
    pub name: String,
    /// When its test restore ended (RFC 3339).
    pub verified_at: String,
    /// Tables its test restore found (PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<i64>,
    /// Rows its test restore counted (PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<i64>,
    /// Keys its test restore loaded (Redis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    /// Regular files its test restore read back (storage volume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<i64>,
}
