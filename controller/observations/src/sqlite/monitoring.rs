//! Monitoring samples in the SQLite store.

use berth_crds::monitoring::MonitoringSample;
use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use crate::StoreError;
use crate::monitoring::{
    Access, MonitoringStore, RollupQuery, RollupRead, RollupRow, Row, SampleQuery, SampleRecord,
    Tier, contributions, merged, oldest_first, scope_filter,
};
use crate::monitoring::{rollup_row, upsert_rollup_tail};

const INSERT: &str = "
INSERT INTO monitoring_samples
    (sample_id, namespace, server, scope, project, environment, resource, deployment,
     observed_ms, sample)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
ON CONFLICT (sample_id) DO NOTHING";

/// One rollup contribution, added to the row of its bucket.
const UPSERT_ROLLUP: &str = concat!(
    "INSERT INTO monitoring_rollups
        (namespace, series, tier, bucket_ms, metric, server, scope, project, environment,
         resource, deployment, n, total, lo, hi)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    upsert_rollup_tail!("namespace, tier, scope, series, bucket_ms, metric")
);

/// The rollup read of one [`Access`], with the parameters of the samples' read, `?10` the
/// tier and `?4`, `?11` the two `scope` values of its [`RollupRead`].
macro_rules! select_rollup {
    ($access:literal) => {
        concat!(
            "SELECT series, server, scope, project, environment, resource, deployment,
                    bucket_ms, metric, n, total, lo, hi
             FROM monitoring_rollups WHERE namespace = ?1 AND tier = ?10 ",
            $access,
            " AND bucket_ms BETWEEN ?2 AND ?3
               AND scope IN (?4, ?11)
               AND (?5 IS NULL OR server = ?5)
               AND (?6 IS NULL OR project = ?6)
               AND (?7 IS NULL OR environment = ?7)
               AND (?8 IS NULL OR resource = ?8)
               AND (?9 IS NULL OR deployment = ?9)
             ORDER BY bucket_ms, series, metric"
        )
    };
}

const ROLLUP_BY_RESOURCE: &str = select_rollup!("AND resource = ?8");
const ROLLUP_BY_SERVER: &str = select_rollup!("AND server = ?5");
const ROLLUP_BY_NAMESPACE: &str = select_rollup!("");

/// Per resource of the scope (container series), the contributor metrics summed over the
/// window; the parameters of [`select_rollup`].
const RESOURCE_USAGE: &str = "
SELECT resource, min(server), scope, project, environment, resource, NULL,
       min(bucket_ms), metric, sum(n), sum(total), min(lo), max(hi)
FROM monitoring_rollups WHERE namespace = ?1 AND tier = ?10 AND scope IN (?4, ?11)
   AND bucket_ms BETWEEN ?2 AND ?3
   AND metric IN ('containerCpuPercent', 'memoryUsedBytes')
   AND resource IS NOT NULL
   AND (?5 IS NULL OR server = ?5)
   AND (?6 IS NULL OR project = ?6)
   AND (?7 IS NULL OR environment = ?7)
   AND (?8 IS NULL OR resource = ?8)
   AND (?9 IS NULL OR deployment = ?9)
GROUP BY resource, project, environment, metric";

/// The read of one [`Access`]: `$access` is the predicate that picks the index.
macro_rules! select {
    ($access:literal) => {
        concat!(
            "SELECT sample FROM monitoring_samples WHERE ",
            $access,
            " AND observed_ms BETWEEN ?2 AND ?3
               AND (?4 IS NULL OR scope = ?4)
               AND (?5 IS NULL OR server = ?5)
               AND (?6 IS NULL OR project = ?6)
               AND (?7 IS NULL OR environment = ?7)
               AND (?8 IS NULL OR resource = ?8)
               AND (?9 IS NULL OR deployment = ?9)
             ORDER BY observed_ms DESC, sample_id DESC LIMIT ?10"
        )
    };
}

const BY_RESOURCE: &str = select!("namespace = ?1 AND resource = ?8");
const BY_SERVER: &str = select!("namespace = ?1 AND server = ?5");
/// A whole namespace goes through the window (`+` keeps SQLite off the namespace's prefix of
/// the other indexes, which would read every sample the namespace ever kept).
const BY_NAMESPACE: &str = select!("+namespace = ?1");

/// Moves the rollups of a store written before they were clustered (a rowid table) into the
/// clustered table (inside the opening's transaction); nothing to do for a new or already
/// moved store.
pub(super) fn cluster_rollups(connection: &rusqlite::Connection) -> Result<(), StoreError> {
    let table: Option<String> = connection
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'monitoring_rollups'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    if table.is_none_or(|sql| sql.contains("WITHOUT ROWID")) {
        return Ok(());
    }
    let columns = "namespace, series, tier, bucket_ms, metric, server, scope, project, \
                   environment, resource, deployment, n, total, lo, hi";
    connection.execute_batch(&format!(
        "ALTER TABLE monitoring_rollups RENAME TO monitoring_rollups_unclustered;
         DROP INDEX IF EXISTS monitoring_rollups_by_resource;
         DROP INDEX IF EXISTS monitoring_rollups_by_server;
         DROP INDEX IF EXISTS monitoring_rollups_by_age;
         DROP INDEX IF EXISTS monitoring_rollups_by_scope;
         {}
         INSERT INTO monitoring_rollups ({columns})
             SELECT {columns} FROM monitoring_rollups_unclustered;
         DROP TABLE monitoring_rollups_unclustered;",
        crate::monitoring::SQLITE_ROLLUPS_SCHEMA
    ))?;
    Ok(())
}

impl MonitoringStore for SqliteStore {
    fn record_samples(&self, samples: &[SampleRecord]) -> Result<(), StoreError> {
        let rows = samples.iter().map(Row::of).collect::<Result<Vec<_>, _>>()?;
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(INSERT)?;
            let mut upsert = transaction.prepare_cached(UPSERT_ROLLUP)?;
            let mut pending = Vec::new();
            for (row, record) in rows.iter().zip(samples) {
                let inserted = insert.execute(params![
                    row.sample_id,
                    row.namespace,
                    row.server,
                    row.scope,
                    row.project,
                    row.environment,
                    row.resource,
                    row.deployment,
                    row.observed_ms,
                    row.sample,
                ])?;
                // A sample stored already was counted already.
                if inserted == 0 {
                    continue;
                }
                let namespace = &record.namespace;
                pending.extend(
                    contributions(record)
                        .into_iter()
                        .map(|(tier, rollup)| (namespace.clone(), tier, rollup)),
                );
            }
            for (namespace, tier, rollup) in merged(pending) {
                upsert.execute(params![
                    namespace,
                    rollup.series,
                    tier.as_str(),
                    rollup.bucket_ms,
                    rollup.metric,
                    rollup.server,
                    rollup.scope,
                    rollup.project,
                    rollup.environment,
                    rollup.resource,
                    rollup.deployment,
                    rollup.count,
                    rollup.total,
                    rollup.min,
                    rollup.max,
                ])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn samples(&self, query: &SampleQuery) -> Result<Vec<MonitoringSample>, StoreError> {
        let sql = match Access::of(query) {
            Access::Resource => BY_RESOURCE,
            Access::Server => BY_SERVER,
            Access::Namespace => BY_NAMESPACE,
        };
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let connection = self.connection();
        let mut select = connection.prepare_cached(sql)?;
        let rows = select.query_map(
            params![
                query.namespace,
                query.from_ms,
                query.to_ms,
                scope_filter(query.kind),
                query.server,
                query.project,
                query.environment,
                query.resource,
                query.deployment,
                limit,
            ],
            |row| row.get::<_, String>(0),
        )?;
        let newest_first = rows.collect::<Result<Vec<_>, _>>()?;
        oldest_first(newest_first)
    }

    fn prune_samples(&self, before_ms: i64) -> Result<usize, StoreError> {
        let connection = self.connection();
        let removed = connection.execute(
            "DELETE FROM monitoring_samples WHERE observed_ms < ?1",
            params![before_ms],
        )?;
        connection.execute(
            "DELETE FROM monitoring_rollups WHERE bucket_ms < ?1",
            params![before_ms],
        )?;
        Ok(removed)
    }

    fn rollup(&self, query: &RollupQuery) -> Result<Vec<RollupRow>, StoreError> {
        let read = RollupRead::of(query);
        let sql = read.statement([ROLLUP_BY_RESOURCE, ROLLUP_BY_SERVER, ROLLUP_BY_NAMESPACE]);
        self.read_rollup(sql, &read, query.tier)
    }

    fn resource_usage(&self, query: &RollupQuery) -> Result<Vec<RollupRow>, StoreError> {
        let read = RollupRead::of_usage(query);
        self.read_rollup(RESOURCE_USAGE, &read, query.tier)
    }
}

impl SqliteStore {
    fn read_rollup(
        &self,
        sql: &str,
        read: &RollupRead,
        tier: Tier,
    ) -> Result<Vec<RollupRow>, StoreError> {
        let filters = &read.filters;
        let connection = self.connection();
        let mut select = connection.prepare_cached(sql)?;
        let rows = select.query_map(
            params![
                filters.namespace,
                filters.from_ms,
                filters.to_ms,
                read.scopes[0],
                filters.server,
                filters.project,
                filters.environment,
                filters.resource,
                filters.deployment,
                tier.as_str(),
                read.scopes[1],
            ],
            |row| Ok(rollup_row!(row?)),
        )?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}
