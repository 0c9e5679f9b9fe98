//! Access-failure evidence in the SQLite store.

use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use crate::StoreError;
use crate::access_failures::{AccessFailureRecord, AccessFailureStore, COLUMNS, StoredRow, now_ms};

fn stored_row(row: &Row<'_>) -> rusqlite::Result<StoredRow> {
    Ok(StoredRow {
        namespace: row.get(0)?,
        server: row.get(1)?,
        resource: row.get(2)?,
        captured_ms: row.get(3)?,
        expires_ms: row.get(4)?,
        evidence: row.get(5)?,
    })
}

impl AccessFailureStore for SqliteStore {
    fn record_access_failure(&self, record: &AccessFailureRecord) -> Result<bool, StoreError> {
        let evidence = serde_json::to_string(&record.evidence)?;
        let connection = self.connection();
        let inserted = connection.execute(
            "INSERT INTO access_failure_evidence
                 (request_id, namespace, server, resource, hostname, path, captured_ms,
                  expires_ms, evidence)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (request_id) DO NOTHING",
            params![
                record.evidence.request_id,
                record.namespace,
                record.server,
                record.resource,
                record.evidence.affected.hostname,
                record.evidence.affected.path,
                record.captured_at_ms,
                record.expires_at_ms,
                evidence
            ],
        )?;
        Ok(inserted == 1)
    }

    fn access_failure(&self, request_id: &str) -> Result<Option<AccessFailureRecord>, StoreError> {
        let connection = self.connection();
        let row = connection
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM access_failure_evidence
                     WHERE request_id = ?1 AND expires_ms > ?2"
                ),
                params![request_id, now_ms()],
                stored_row,
            )
            .optional()?;
        row.map(StoredRow::into_record).transpose()
    }

    fn latest_access_failure(
        &self,
        namespace: &str,
        resource: &str,
    ) -> Result<Option<AccessFailureRecord>, StoreError> {
        let connection = self.connection();
        let row = connection
            .query_row(
                &format!(
                    "SELECT {COLUMNS} FROM access_failure_evidence
                     WHERE namespace = ?1 AND resource = ?2 AND expires_ms > ?3
                     ORDER BY captured_ms DESC, request_id DESC LIMIT 1"
                ),
                params![namespace, resource, now_ms()],
                stored_row,
            )
            .optional()?;
        row.map(StoredRow::into_record).transpose()
    }

    fn prune_access_failures(&self, now_ms: i64) -> Result<usize, StoreError> {
        let connection = self.connection();
        let removed = connection.execute(
            "DELETE FROM access_failure_evidence WHERE expires_ms <= ?1",
            params![now_ms],
        )?;
        Ok(removed)
    }
}
