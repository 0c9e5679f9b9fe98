//! Access-failure evidence in the PostgreSQL store.

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{Failed, PostgresStore};
use crate::StoreError;
use crate::access_failures::{AccessFailureRecord, AccessFailureStore, SCHEMA, StoredRow, now_ms};

const INSERT: &str = "
INSERT INTO access_failure_evidence
    (request_id, namespace, server, resource, hostname, path, captured_ms, expires_ms, evidence)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (request_id) DO NOTHING";
const BY_REQUEST: &str = "
SELECT namespace, server, resource, captured_ms, expires_ms, evidence
FROM access_failure_evidence WHERE request_id = $1 AND expires_ms > $2";
const LATEST: &str = "
SELECT namespace, server, resource, captured_ms, expires_ms, evidence
FROM access_failure_evidence
WHERE namespace = $1 AND resource = $2 AND expires_ms > $3
ORDER BY captured_ms DESC, request_id DESC LIMIT 1";
const PRUNE: &str = "DELETE FROM access_failure_evidence WHERE expires_ms <= $1";

/// Creates the evidence table; run under the migration lock, after the versioned migrations.
pub(super) async fn create_schema(
    transaction: &tokio_postgres::Transaction<'_>,
) -> Result<(), Failed> {
    Ok(transaction.batch_execute(SCHEMA).await?)
}

fn stored_row(row: &Row) -> StoredRow {
    StoredRow {
        namespace: row.get(0),
        server: row.get(1),
        resource: row.get(2),
        captured_ms: row.get(3),
        expires_ms: row.get(4),
        evidence: row.get(5),
    }
}

impl PostgresStore {
    /// The one row `sql` selects with `params`, as a record.
    fn select_one(
        &self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<AccessFailureRecord>, StoreError> {
        let row = self.block_on(self.run(async |connection| {
            let statement = connection.prepare(sql).await?;
            Ok(connection.client.query_opt(&statement, params).await?)
        }))?;
        row.as_ref()
            .map(stored_row)
            .map(StoredRow::into_record)
            .transpose()
    }
}

impl AccessFailureStore for PostgresStore {
    fn record_access_failure(&self, record: &AccessFailureRecord) -> Result<bool, StoreError> {
        let evidence = serde_json::to_string(&record.evidence)?;
        let inserted = self.block_on(self.run(async |connection| {
            let insert = connection.prepare(INSERT).await?;
            let params: [&(dyn ToSql + Sync); 9] = [
                &record.evidence.request_id,
                &record.namespace,
                &record.server,
                &record.resource,
                &record.evidence.affected.hostname,
                &record.evidence.affected.path,
                &record.captured_at_ms,
                &record.expires_at_ms,
                &evidence,
            ];
            // Inserting twice is harmless (the id is taken), so a retry on a new connection is.
            Ok(connection.client.execute(&insert, &params).await?)
        }))?;
        Ok(inserted == 1)
    }

    fn access_failure(&self, request_id: &str) -> Result<Option<AccessFailureRecord>, StoreError> {
        self.select_one(BY_REQUEST, &[&request_id, &now_ms()])
    }

    fn latest_access_failure(
        &self,
        namespace: &str,
        resource: &str,
    ) -> Result<Option<AccessFailureRecord>, StoreError> {
        self.select_one(LATEST, &[&namespace, &resource, &now_ms()])
    }

    fn prune_access_failures(&self, now_ms: i64) -> Result<usize, StoreError> {
        let removed = self.block_on(self.run(async |connection| {
            let prune = connection.prepare(PRUNE).await?;
            Ok(connection.client.execute(&prune, &[&now_ms]).await?)
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}
