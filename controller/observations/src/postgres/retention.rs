//! Retention on PostgreSQL: counting and deleting one namespace's history older than a cutoff,
//! with the statements SQLite runs (numbered placeholders rewritten), and forgetting a
//! resource's history in one statement.

use super::{PostgresStore, numbered};
use crate::{History, RetentionStore, StoreError};

impl RetentionStore for PostgresStore {
    fn count_before(
        &self,
        namespace: &str,
        history: History,
        before_ms: i64,
    ) -> Result<u64, StoreError> {
        let sql = numbered(&history.count_sql());
        let count: i64 = self.block_on(self.run(async |connection| {
            let row = connection
                .client
                .query_one(&sql, &[&namespace, &before_ms])
                .await?;
            Ok(row.get(0))
        }))?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    fn delete_before(
        &self,
        namespace: &str,
        history: History,
        before_ms: i64,
    ) -> Result<u64, StoreError> {
        let statements: Vec<String> = history.delete_sql().iter().map(|s| numbered(s)).collect();
        // One statement after another: each is safe to run again, so a run cut short is
        // finished by the next.
        self.block_on(self.run(async |connection| {
            let mut deleted = None;
            for sql in &statements {
                let rows = connection
                    .client
                    .execute(sql.as_str(), &[&namespace, &before_ms])
                    .await?;
                deleted.get_or_insert(rows);
            }
            Ok(deleted.unwrap_or(0))
        }))
    }

    fn forget_resource(&self, namespace: &str, resource: &str) -> Result<usize, StoreError> {
        const FORGET: &str = "
            WITH timeline AS (
                DELETE FROM deployment_timeline WHERE namespace = $1 AND resource = $2
                RETURNING 1
            ), health AS (
                DELETE FROM health_history WHERE namespace = $1 AND resource = $2 RETURNING 1
            ), samples AS (
                DELETE FROM monitoring_samples WHERE namespace = $1 AND resource = $2
                RETURNING 1
            ), rollups AS (
                DELETE FROM monitoring_rollups WHERE namespace = $1 AND resource = $2
                RETURNING 1
            ), evidence AS (
                DELETE FROM access_failure_evidence WHERE namespace = $1 AND resource = $2
                RETURNING 1
            ), attempts AS (
                DELETE FROM deployment_attempts WHERE namespace = $1 AND resource = $2
            )
            SELECT (SELECT count(*) FROM timeline) + (SELECT count(*) FROM health)
                 + (SELECT count(*) FROM samples) + (SELECT count(*) FROM rollups)
                 + (SELECT count(*) FROM evidence)";
        let removed: i64 = self.block_on(self.run(async |connection| {
            let forget = connection.prepare(FORGET).await?;
            let row = connection
                .client
                .query_one(&forget, &[&namespace, &resource])
                .await?;
            Ok(row.get(0))
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}
