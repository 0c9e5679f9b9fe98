//! REST writes' audit records in the SQLite store.

use rusqlite::params;

use super::SqliteStore;
use crate::StoreError;
use crate::audit::{AuditQuery, AuditRecord, AuditStore, INSERT, SELECT, select_params};

impl AuditStore for SqliteStore {
    fn record_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(INSERT)?;
            for r in records {
                insert.execute(params![
                    r.id,
                    r.namespace,
                    r.occurred_ms,
                    r.object_kind,
                    r.object_id,
                    r.resource,
                    r.actor_kind,
                    r.actor_id,
                    r.action,
                    r.detail
                ])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn audit_records(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        let (namespace, resource, object, before_ms, before_id, limit) = select_params(query);
        let connection = self.connection();
        let mut select = connection.prepare_cached(SELECT)?;
        let rows = select.query_map(
            params![namespace, resource, object, before_ms, before_id, limit],
            |row| {
                Ok(AuditRecord {
                    id: row.get(0)?,
                    namespace: row.get(1)?,
                    occurred_ms: row.get(2)?,
                    object_kind: row.get(3)?,
                    object_id: row.get(4)?,
                    resource: row.get(5)?,
                    actor_kind: row.get(6)?,
                    actor_id: row.get(7)?,
                    action: row.get(8)?,
                    detail: row.get(9)?,
                })
            },
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
