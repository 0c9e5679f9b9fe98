//! Retention on PostgreSQL: counting and deleting one namespace's history older than a cutoff,
//! with the statements SQLite runs (numbered placeholders rewritten).

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
}
