//! REST writes' audit records in the PostgreSQL store.

use tokio_postgres::types::ToSql;

use super::{Failed, PostgresStore, numbered};
use crate::StoreError;
use crate::audit::{AuditQuery, AuditRecord, AuditStore, INSERT, SELECT, select_params};

impl AuditStore for PostgresStore {
    fn record_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        let sql = numbered(INSERT);
        self.block_on(self.run(async |connection| {
            let transaction = connection.client.transaction().await?;
            let insert = transaction.prepare(sql.as_str()).await?;
            for r in records {
                let params: [&(dyn ToSql + Sync); 10] = [
                    &r.id,
                    &r.namespace,
                    &r.occurred_ms,
                    &r.object_kind,
                    &r.object_id,
                    &r.resource,
                    &r.actor_kind,
                    &r.actor_id,
                    &r.action,
                    &r.detail,
                ];
                transaction.execute(&insert, &params).await?;
            }
            // Ids are unique: inserting again after a lost commit changes nothing.
            transaction.commit().await.map_err(Failed::maybe_committed)
        }))
    }

    fn audit_records(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError> {
        let (namespace, resource, object, before_ms, before_id, limit) = select_params(query);
        let sql = numbered(SELECT);
        let rows = self.block_on(self.run(async |connection| {
            let params: [&(dyn ToSql + Sync); 6] = [
                &namespace, &resource, &object, &before_ms, &before_id, &limit,
            ];
            Ok(connection.client.query(sql.as_str(), &params).await?)
        }))?;
        Ok(rows
            .iter()
            .map(|row| AuditRecord {
                id: row.get(0),
                namespace: row.get(1),
                occurred_ms: row.get(2),
                object_kind: row.get(3),
                object_id: row.get(4),
                resource: row.get(5),
                actor_kind: row.get(6),
                actor_id: row.get(7),
                action: row.get(8),
                detail: row.get(9),
            })
            .collect())
    }
}
