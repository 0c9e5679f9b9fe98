//! Removed deployment attempts in the SQLite store.

use rusqlite::{OptionalExtension, Row, params, params_from_iter};

use super::SqliteStore;
use crate::StoreError;
use crate::attempts::{
    AttemptQuery, AttemptRecord, AttemptStore, Dialect, Filter, MARK_REMOVED, ONE, UNREMOVED,
    UPSERT, Value, timeline_counts_sql,
};

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Value::Text(text) => text.to_sql(),
            Value::Integer(number) => number.to_sql(),
        }
    }
}

fn record(row: &Row<'_>) -> rusqlite::Result<AttemptRecord> {
    Ok(AttemptRecord {
        namespace: row.get(0)?,
        deployment: row.get(1)?,
        resource: row.get(2)?,
        project: row.get(3)?,
        environment: row.get(4)?,
        server: row.get(5)?,
        status: row.get(6)?,
        created_ms: row.get(7)?,
        removed: row.get(8)?,
        object: row.get(9)?,
    })
}

impl AttemptStore for SqliteStore {
    fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        {
            let mut upsert = transaction.prepare_cached(UPSERT)?;
            for r in records {
                upsert.execute(params![
                    r.namespace,
                    r.deployment,
                    r.resource,
                    r.project,
                    r.environment,
                    r.server,
                    r.status,
                    r.created_ms,
                    r.removed,
                    r.object
                ])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn mark_removed(&self, namespace: &str, deployments: &[String]) -> Result<(), StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        {
            let mut mark = transaction.prepare_cached(MARK_REMOVED)?;
            for deployment in deployments {
                mark.execute(params![namespace, deployment])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn unremoved_attempts(&self) -> Result<Vec<(String, String)>, StoreError> {
        let connection = self.connection();
        let mut select = connection.prepare_cached(UNREMOVED)?;
        let rows = select.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn removed_attempts(&self, query: &AttemptQuery) -> Result<Vec<AttemptRecord>, StoreError> {
        let (sql, values) = Filter::select(query, Dialect::Sqlite);
        let connection = self.connection();
        let mut select = connection.prepare_cached(&sql)?;
        let rows = select.query_map(params_from_iter(values.iter()), record)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn count_removed(&self, query: &AttemptQuery) -> Result<u64, StoreError> {
        let (sql, values) = Filter::count(query, Dialect::Sqlite);
        let connection = self.connection();
        let count: i64 =
            connection.query_row(&sql, params_from_iter(values.iter()), |row| row.get(0))?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    fn attempt(
        &self,
        namespace: &str,
        deployment: &str,
    ) -> Result<Option<AttemptRecord>, StoreError> {
        let connection = self.connection();
        let mut select = connection.prepare_cached(ONE)?;
        Ok(select
            .query_row(params![namespace, deployment], record)
            .optional()?)
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
        let sql = timeline_counts_sql(Dialect::Sqlite, deployments.len());
        let mut values = vec![namespace.to_string(), resource.to_string()];
        values.extend(deployments.iter().cloned());
        let connection = self.connection();
        let mut select = connection.prepare_cached(&sql)?;
        let rows = select.query_map(params_from_iter(values.iter()), |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
