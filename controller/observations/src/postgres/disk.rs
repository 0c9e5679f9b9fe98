//! Servers' disk artifacts in the PostgreSQL store.

use super::{PostgresStore, numbered};
use crate::StoreError;
use crate::disk::{DiskRecord, DiskStore, SELECT, UPSERT, record};

impl DiskStore for PostgresStore {
    fn record_disk(&self, disk: &DiskRecord) -> Result<(), StoreError> {
        let artifacts = serde_json::to_string(&disk.artifacts)?;
        let sql = numbered(UPSERT);
        self.block_on(self.run(async |connection| {
            connection
                .client
                .execute(
                    sql.as_str(),
                    &[&disk.namespace, &disk.server, &disk.observed_ms, &artifacts],
                )
                .await?;
            Ok(())
        }))
    }

    fn disk(&self, namespace: &str) -> Result<Vec<DiskRecord>, StoreError> {
        let sql = numbered(SELECT);
        let rows = self.block_on(self.run(async |connection| {
            Ok(connection.client.query(sql.as_str(), &[&namespace]).await?)
        }))?;
        rows.iter()
            .map(|row| record(namespace, row.get(0), row.get(1), row.get(2)))
            .collect()
    }
}
