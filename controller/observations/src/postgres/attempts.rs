//! Removed deployment attempts in the PostgreSQL store.

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{Failed, PostgresStore, numbered};
use crate::StoreError;
use crate::attempts::{
    AttemptQuery, AttemptRecord, AttemptStore, Dialect, Filter, MARK_REMOVED, ONE, UNREMOVED,
    UPSERT, Value, timeline_counts_sql,
};

fn record(row: &Row) -> AttemptRecord {
    AttemptRecord {
        namespace: row.get(0),
        deployment: row.get(1),
        resource: row.get(2),
        project: row.get(3),
        environment: row.get(4),
        server: row.get(5),
        status: row.get(6),
        created_ms: row.get(7),
        removed: row.get(8),
        object: row.get(9),
    }
}

fn bound(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values
        .iter()
        .map(|value| match value {
            Value::Text(text) => text as &(dyn ToSql + Sync),
            Value::Integer(number) => number as &(dyn ToSql + Sync),
        })
        .collect()
}

impl AttemptStore for PostgresStore {
    fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), StoreError> {
        let sql = numbered(UPSERT);
        self.block_on(self.run(async |connection| {
            let transaction = connection.client.transaction().await?;
            let upsert = transaction.prepare(&sql).await?;
            // One order for every writer: two shim replicas upserting the same rows in their
            // caches' orders waited on each other's row locks (PostgreSQL: deadlock detected).
            let mut ordered: Vec<&AttemptRecord> = records.iter().collect();
            ordered
                .sort_by(|a, b| (&a.namespace, &a.deployment).cmp(&(&b.namespace, &b.deployment)));
            for r in ordered {
                let params: [&(dyn ToSql + Sync); 10] = [
                    &r.namespace,
                    &r.deployment,
                    &r.resource,
                    &r.project,
                    &r.environment,
                    &r.server,
                    &r.status,
                    &r.created_ms,
                    &r.removed,
                    &r.object,
                ];
                transaction.execute(&upsert, &params).await?;
            }
            transaction.commit().await.map_err(Failed::maybe_committed)
        }))
    }

    fn mark_removed(&self, namespace: &str, deployments: &[String]) -> Result<(), StoreError> {
        let sql = numbered(MARK_REMOVED);
        self.block_on(self.run(async |connection| {
            let mark = connection.client.prepare(&sql).await?;
            for deployment in deployments {
                connection
                    .client
                    .execute(&mark, &[&namespace, deployment])
                    .await?;
            }
            Ok(())
        }))
    }

    fn unremoved_attempts(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = self.block_on(
            self.run(async |connection| Ok(connection.client.query(UNREMOVED, &[]).await?)),
        )?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }

    fn removed_attempts(&self, query: &AttemptQuery) -> Result<Vec<AttemptRecord>, StoreError> {
        let (sql, values) = Filter::select(query, Dialect::Postgres);
        let rows =
            self.block_on(self.run(async |connection| {
                Ok(connection.client.query(&sql, &bound(&values)).await?)
            }))?;
        Ok(rows.iter().map(record).collect())
    }

    fn count_removed(&self, query: &AttemptQuery) -> Result<u64, StoreError> {
        let (sql, values) = Filter::count(query, Dialect::Postgres);
        let count: i64 = self.block_on(self.run(async |connection| {
            let row = connection.client.query_one(&sql, &bound(&values)).await?;
            Ok(row.get(0))
        }))?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    fn attempt(
        &self,
        namespace: &str,
        deployment: &str,
    ) -> Result<Option<AttemptRecord>, StoreError> {
        let sql = numbered(ONE);
        let row = self.block_on(self.run(async |connection| {
            Ok(connection
                .client
                .query_opt(&sql, &[&namespace, &deployment])
                .await?)
        }))?;
        Ok(row.as_ref().map(record))
    }

    fn timeline_counts(
        &self,
        namespace: &str,
        resource: &str,
        deployments: &[String],
    ) -> Result<Vec<(String, i64)>, StoreError> {
        if deployments.is_empty() {
            return Ok(Vec::new());
        }
        let sql = timeline_counts_sql(Dialect::Postgres, deployments.len());
        let (namespace, resource) = (namespace.to_string(), resource.to_string());
        let rows = self.block_on(self.run(async |connection| {
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&namespace, &resource];
            params.extend(deployments.iter().map(|d| d as &(dyn ToSql + Sync)));
            Ok(connection.client.query(&sql, &params).await?)
        }))?;
        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
    }
}
