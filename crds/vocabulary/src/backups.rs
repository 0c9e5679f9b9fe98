//! Backups: where a backup is, and the kinds of place backups are kept.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::dependencies::DependencyKind;

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
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BackupTargetKind {
    /// A directory on a registered Server, written over the SSH connection Berth holds.
    #[default]
    ServerDirectory,
    /// A bucket of an S3-compatible object store (AWS S3, Garage, MinIO, R2, …).
    S3,
}

/// The provider of Berth's PostgreSQL backups (`providerKey`): a `pg_dump -Fc` sealed by the
/// controller and proven by a test restore.
pub const PG_DUMP_PROVIDER: &str = "berth-sealed-pg-dump";
/// The provider key of a Redis's backups: its snapshot (RDB), sealed likewise.
pub const REDIS_RDB_PROVIDER: &str = "berth-sealed-redis-rdb";

/// What a test restore counted, for people: "2 tables, 1002 rows" for a PostgreSQL, "1000
/// keys" for a Redis; `None` when it counted nothing.
pub fn counted_contents(
    tables: Option<i64>,
    rows: Option<i64>,
    keys: Option<i64>,
) -> Option<String> {
    let counted: Vec<String> = [(tables, "tables"), (rows, "rows"), (keys, "keys")]
        .into_iter()
        .filter_map(|(count, what)| count.map(|n| format!("{n} {what}")))
        .collect();
    (!counted.is_empty()).then(|| counted.join(", "))
}

/// Every backup provider key, as a request may name one.
pub const BACKUP_PROVIDERS: &[&str] = &[PG_DUMP_PROVIDER, REDIS_RDB_PROVIDER];

/// The provider key of the backups of a database of `kind`.
pub fn provider_key(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::Postgres => PG_DUMP_PROVIDER,
        DependencyKind::Redis => REDIS_RDB_PROVIDER,
    }
}

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

#[cfg(test)]
mod counted_tests {
    use super::counted_contents;

    #[test]
    fn contents_say_what_each_kind_counts() {
        assert_eq!(
            counted_contents(Some(2), Some(1002), None).as_deref(),
            Some("2 tables, 1002 rows")
        );
        assert_eq!(
            counted_contents(None, None, Some(7)).as_deref(),
            Some("7 keys")
        );
        assert_eq!(counted_contents(None, None, None), None);
    }
}
