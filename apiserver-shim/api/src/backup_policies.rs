//! Backup policies over REST: Appaloft's `dependency-resources.backup-policies.configure|list|show`
//! routes and records (`dependencyResourceBackupPolicyReadSchema`), with what Berth adds: a
//! cron schedule read in a time zone beside Appaloft's interval in hours, retention by count,
//! by day and by week beside Appaloft's days, the target, and the newest proven restore point.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backups::check_provider;
use crate::limits::OBJECT_NAME_MAX;
use crate::scheduled_tasks::check_schedule;
use crate::validate::{Checked, FieldError, in_range, optional_text};

pub use berth_vocabulary::backups::{
    BackupStatus, KEEP_DAILY_MAX, KEEP_DAYS_MAX, KEEP_LAST_MAX, KEEP_WEEKLY_MAX,
};
pub use berth_vocabulary::scheduled_tasks::INTERVAL_HOURS_MAX;

/// A policy record's `schemaVersion`.
pub const POLICY_SCHEMA: &str = "dependency-resource-backup-policies.policy/v1";
/// `GET /dependency-resources/backup-policies` answer's `schemaVersion`.
pub const LIST_SCHEMA: &str = "dependency-resource-backup-policies.list/v1";
/// `GET /dependency-resources/backup-policies/{policyId}` answer's `schemaVersion`.
pub const SHOW_SCHEMA: &str = "dependency-resource-backup-policies.show/v1";
/// The one policy version there is.
pub const POLICY_VERSION: &str = "v1";

/// `POST /dependency-resources/backup-policies`: creates the dependency's policy, or changes
/// the one named by `policyId` (else the dependency's existing one) in the fields given.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default, Clone)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigureBackupPolicy {
    /// The policy to change; the dependency's own when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_id: Option<String>,
    /// Only `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub dependency_resource_id: String,
    /// Keep every backup younger than this many days (1 to 3650).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<i64>,
    /// Back up every this many hours (1 to 8760), counted from the Unix epoch. Give this or
    /// `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_interval_hours: Option<i64>,
    /// Only `berth-sealed-pg-dump`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    /// Only true: a backup whose server cannot be reached is tried again for 15 minutes. A
    /// dump that fails is recorded failed and told, not tried again before the next slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on_failure: Option<bool>,
    /// Whether slots take backups (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Berth: a five-field cron pattern or `@daily`-style name, read in `timezone`. Give this
    /// or `scheduleIntervalHours`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Berth: the IANA zone `schedule` is read in (default UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
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
}

impl ConfigureBackupPolicy {
    /// The fields on their own; whether a schedule is given at all depends on whether the
    /// policy exists ([`ConfigureBackupPolicy::check_new`]).
    pub fn validate(&self) -> Checked {
        optional_text("policyId", self.policy_id.as_ref(), OBJECT_NAME_MAX)?;
        if self.version.as_deref().is_some_and(|v| v != POLICY_VERSION) {
            return Err(FieldError::not_one_of("version", &[POLICY_VERSION]));
        }
        crate::validate::bounded(
            "dependencyResourceId",
            &self.dependency_resource_id,
            OBJECT_NAME_MAX,
        )?;
        optional_text("targetId", self.target_id.as_ref(), OBJECT_NAME_MAX)?;
        check_provider(self.provider_key.as_deref())?;
        if self.retry_on_failure == Some(false) {
            return Err(FieldError::new(
                "retryOnFailure",
                "retryOnFailure can only be true: Berth always tries a backup again while its \
                 server cannot be reached (for 15 minutes)",
            ));
        }
        self.timing().check()
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

    /// A new policy needs its schedule.
    pub fn check_new(&self) -> Checked {
        self.timing().check_new()
    }
}

/// The schedule and retention fields of a configure request (a database's policy or a
/// volume's), checked the same way.
pub struct PolicyTiming<'a> {
    pub schedule: Option<&'a str>,
    pub timezone: Option<&'a str>,
    pub interval_hours: Option<i64>,
    pub retention_days: Option<i64>,
    pub keep_last: Option<i64>,
    pub keep_daily: Option<i64>,
    pub keep_weekly: Option<i64>,
}

impl PolicyTiming<'_> {
    pub fn check(&self) -> Checked {
        self.check_schedule()?;
        self.check_retention()
    }

    fn check_schedule(&self) -> Checked {
        if self.schedule.is_some() && self.interval_hours.is_some() {
            return Err(FieldError::new(
                "scheduleIntervalHours",
                "give schedule or scheduleIntervalHours, not both",
            ));
        }
        if self.timezone.is_some() && self.interval_hours.is_some() {
            return Err(FieldError::new(
                "timezone",
                "timezone goes with schedule; an interval counts from the Unix epoch",
            ));
        }
        in_range(
            "scheduleIntervalHours",
            self.interval_hours,
            1,
            INTERVAL_HOURS_MAX,
        )?;
        match self.schedule {
            Some(schedule) => check_schedule(schedule, self.timezone.unwrap_or("UTC")),
            None => Ok(()),
        }
    }

    fn check_retention(&self) -> Checked {
        in_range("retentionDays", self.retention_days, 1, KEEP_DAYS_MAX)?;
        in_range("keepLast", self.keep_last, 1, KEEP_LAST_MAX)?;
        in_range("keepDaily", self.keep_daily, 1, KEEP_DAILY_MAX)?;
        in_range("keepWeekly", self.keep_weekly, 1, KEEP_WEEKLY_MAX)
    }

    /// A new policy needs its schedule.
    pub fn check_new(&self) -> Checked {
        if self.schedule.is_none() && self.interval_hours.is_none() {
            return Err(FieldError::new(
                "scheduleIntervalHours",
                "a new policy needs scheduleIntervalHours or schedule",
            ));
        }
        Ok(())
    }
}

/// A backup of a policy, as its record names it (Berth).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PolicyBackupSummary {
    pub backup_id: String,
    pub status: BackupStatus,
}

/// The newest backup of a policy proven by a test restore (Berth).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedBackupSummary {
    pub backup_id: String,
    pub verified_at: String,
    /// A PostgreSQL's tables and rows, a Redis's keys, a volume's files, as its test
    /// restore counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<i64>,
}

/// One policy (Appaloft's policy read, and Berth's fields after `updatedAt`).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupPolicySummary {
    pub schema_version: String,
    pub id: String,
    pub version: String,
    pub dependency_resource_id: String,
    /// Days every backup is kept (absent when no rule by age is set).
    pub retention_days: Option<i64>,
    /// Hours between backups (absent for a cron schedule).
    pub schedule_interval_hours: Option<i64>,
    pub provider_key: Option<String>,
    pub retry_on_failure: bool,
    pub enabled: bool,
    /// When the newest backup was asked for.
    pub last_run_at: Option<String>,
    /// When the next backup is due (absent while disabled or not ready).
    pub next_run_at: Option<String>,
    pub updated_at: String,
    pub schedule: Option<String>,
    pub timezone: String,
    pub keep_last: Option<i64>,
    pub keep_daily: Option<i64>,
    pub keep_weekly: Option<i64>,
    pub target_id: String,
    /// Ready backups the rules keep.
    pub backups_kept: i64,
    pub latest_backup: Option<PolicyBackupSummary>,
    /// The restore point to count on.
    pub last_verified_backup: Option<VerifiedBackupSummary>,
    /// The policy's `Ready` condition: false when its newest backup failed, its schedule
    /// cannot be read, or its database or target is gone.
    pub ready: bool,
    pub message: Option<String>,
    pub created_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BackupPolicyList {
    pub schema_version: String,
    pub items: Vec<BackupPolicySummary>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct BackupPolicyShow {
    pub schema_version: String,
    pub policy: BackupPolicySummary,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configure() -> ConfigureBackupPolicy {
        ConfigureBackupPolicy {
            dependency_resource_id: "orders".into(),
            schedule_interval_hours: Some(24),
            ..Default::default()
        }
    }

    fn refused(change: impl FnOnce(&mut ConfigureBackupPolicy)) -> String {
        let mut body = configure();
        change(&mut body);
        body.validate().unwrap_err().field
    }

    #[test]
    fn a_refusal_names_the_field() {
        assert!(configure().validate().is_ok());
        assert_eq!(
            refused(|b| b.schedule = Some("every day".into())),
            "scheduleIntervalHours"
        );
        assert_eq!(
            refused(|b| {
                b.schedule_interval_hours = None;
                b.schedule = Some("every day".into());
            }),
            "schedule"
        );
        assert_eq!(
            refused(|b| {
                b.schedule_interval_hours = None;
                b.schedule = Some("0 3 * * *".into());
                b.timezone = Some("Mars/Olympus".into());
            }),
            "timezone"
        );
        assert_eq!(
            refused(|b| b.schedule_interval_hours = Some(0)),
            "scheduleIntervalHours"
        );
        assert_eq!(refused(|b| b.keep_last = Some(0)), "keepLast");
        assert_eq!(refused(|b| b.retention_days = Some(4000)), "retentionDays");
        assert_eq!(
            refused(|b| b.retry_on_failure = Some(false)),
            "retryOnFailure"
        );
        assert_eq!(
            refused(|b| b.provider_key = Some("s3".into())),
            "providerKey"
        );
        assert_eq!(refused(|b| b.version = Some("v2".into())), "version");
    }

    #[test]
    fn a_new_policy_needs_a_schedule() {
        let bare = ConfigureBackupPolicy {
            dependency_resource_id: "orders".into(),
            ..Default::default()
        };
        assert!(bare.validate().is_ok());
        assert_eq!(bare.check_new().unwrap_err().field, "scheduleIntervalHours");
        assert!(configure().check_new().is_ok());
    }
}
