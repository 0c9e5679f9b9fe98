//! What retention policies (spec §2.2 "Retention default policy") prune: each kind of history
//! the store keeps, counted or deleted per organization namespace before a cutoff; and the
//! whole history of a deleted resource.

use crate::StoreError;

/// A kind of history in the store, each in its own table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    DeploymentTimelines,
    HealthHistory,
    MonitoringSamples,
    AccessFailureEvidence,
    AuditRecords,
}

impl History {
    /// The name reported in a run's `matchedRows`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DeploymentTimelines => "deployment-timelines",
            Self::HealthHistory => "health-history",
            Self::MonitoringSamples => "monitoring-samples",
            Self::AccessFailureEvidence => "access-failure-evidence",
            Self::AuditRecords => "audit-records",
        }
    }

    /// The table and its time column, in Unix milliseconds.
    fn table(self) -> (&'static str, &'static str) {
        match self {
            Self::DeploymentTimelines => ("deployment_timeline", "recorded_ms"),
            Self::HealthHistory => ("health_history", "observed_ms"),
            Self::MonitoringSamples => ("monitoring_samples", "observed_ms"),
            Self::AccessFailureEvidence => ("access_failure_evidence", "captured_ms"),
            Self::AuditRecords => ("audit_records", "occurred_ms"),
        }
    }

    /// Counts the rows of a namespace recorded before `?2` (`?1` the namespace).
    pub(crate) fn count_sql(self) -> String {
        let (table, column) = self.table();
        format!("SELECT count(*) FROM {table} WHERE namespace = ?1 AND {column} < ?2")
    }

    /// Deletes them; monitoring samples take their rollup buckets along.
    pub(crate) fn delete_sql(self) -> Vec<String> {
        let (table, column) = self.table();
        let mut statements = vec![format!(
            "DELETE FROM {table} WHERE namespace = ?1 AND {column} < ?2"
        )];
        if self == Self::DeploymentTimelines {
            // The attempts listed beside their timelines go with them.
            statements.push(
                "DELETE FROM deployment_attempts WHERE namespace = ?1 AND removed = TRUE \
                 AND created_ms < ?2"
                    .into(),
            );
        }
        if self == Self::MonitoringSamples {
            statements.push(
                "DELETE FROM monitoring_rollups WHERE namespace = ?1 AND bucket_ms < ?2".into(),
            );
        }
        statements
    }
}

/// How history leaves the store: retention runs count and delete it per kind before a cutoff,
/// and a deleted resource's goes at once. Only the controller deletes history.
pub trait RetentionStore: Send + Sync {
    /// Rows of `history` in `namespace` recorded before `before_ms`.
    fn count_before(
        &self,
        namespace: &str,
        history: History,
        before_ms: i64,
    ) -> Result<u64, StoreError>;
    /// Deletes them; returns how many rows of `history` went.
    fn delete_before(
        &self,
        namespace: &str,
        history: History,
        before_ms: i64,
    ) -> Result<u64, StoreError>;
    /// Forgets everything recorded of `resource` in `namespace` — its timelines, health
    /// history, monitoring samples and rollups, access-failure evidence — so a resource
    /// created again under the same name starts with no history. Returns the rows deleted.
    fn forget_resource(&self, namespace: &str, resource: &str) -> Result<usize, StoreError>;
}
