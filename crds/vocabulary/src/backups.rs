//! Backups: where a backup is, and the kinds of place backups are kept.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a backup is (Appaloft's statuses).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BackupStatus {
    /// Not taken or not proven yet (`step` says which).
    #[default]
    Pending,
    /// Taken, at its target and restored once in a throwaway container.
    Ready,
    /// It cannot be used; `failureMessage` says why.
    Failed,
}

impl BackupStatus {
    pub const ALL: [Self; 3] = [Self::Pending, Self::Ready, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Ready => "ready",
            Self::Failed => "failed",
        }
    }
}

/// The kinds of backup target.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BackupTargetKind {
    /// A directory on a registered Server, written over the SSH connection Berth holds.
    ServerDirectory,
}

/// The provider of Berth's PostgreSQL backups (`providerKey`): a `pg_dump -Fc` sealed by the
/// controller and proven by a test restore.
pub const PG_DUMP_PROVIDER: &str = "berth-sealed-pg-dump";

/// Where a restore is (Appaloft's restore-attempt statuses).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RestoreStatus {
    /// Not finished yet.
    #[default]
    Pending,
    /// The backup's data is in the target database; `report` says what it holds.
    Completed,
    /// Nothing was changed (the restore runs in one transaction); `failureMessage` says why.
    Failed,
}

impl RestoreStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

/// The longest a backup policy's retention rules may reach.
pub const KEEP_LAST_MAX: i64 = 1000;
pub const KEEP_DAYS_MAX: i64 = 3650;
pub const KEEP_DAILY_MAX: i64 = 366;
pub const KEEP_WEEKLY_MAX: i64 = 520;
