//! Servers' disk artifacts in the SQLite store.

use rusqlite::params;

use super::SqliteStore;
use crate::StoreError;
use crate::disk::{DiskRecord, DiskStore, SELECT, UPSERT, record};

impl DiskStore for SqliteStore {
    fn record_disk(&self, disk: &DiskRecord) -> Result<(), StoreError> {
        let artifacts = serde_json::to_string(&disk.artifacts)?;
        self.connection().prepare_cached(UPSERT)?.execute(params![
            disk.namespace,
            disk.server,
            disk.observed_ms,
            artifacts
        ])?;
        Ok(())
    }

    fn disk(&self, namespace: &str) -> Result<Vec<DiskRecord>, StoreError> {
        let connection = self.connection();
        let mut select = connection.prepare_cached(SELECT)?;
        let rows = select.query_map(params![namespace], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get::<_, String>(2)?))
        })?;
        rows.map(|row| {
            let (server, observed_ms, artifacts) = row?;
            record(namespace, server, observed_ms, &artifacts)
        })
        .collect()
    }
}
