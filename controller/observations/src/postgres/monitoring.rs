//! Monitoring samples in the PostgreSQL store.

use std::collections::HashSet;

use berth_crds::monitoring::MonitoringSample;
use tokio_postgres::types::ToSql;

use super::{Failed, PostgresStore};
use crate::StoreError;
use crate::monitoring::{
    Access, MonitoringStore, RollupQuery, RollupRead, RollupRow, Row, SCHEMA, SampleQuery,
    SampleRecord, Tier, contributions, oldest_first, scope_filter,
};
use crate::monitoring::{rollup_row, upsert_rollup_tail};

/// One statement for a whole tick, however many containers it measured: the samples, then
/// the rollup contributions of those newly stored (grouped, so each rollup row changes once).
const INSERT: &str = concat!(
    "
WITH inserted AS (
    INSERT INTO monitoring_samples
        (sample_id, namespace, server, scope, project, environment, resource, deployment,
         observed_ms, sample)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                         $7::text[], $8::text[], $9::bigint[], $10::text[])
    ON CONFLICT (sample_id) DO NOTHING
    RETURNING sample_id
), contributions AS (
    SELECT r.namespace, r.series, r.tier, r.bucket_ms, r.metric, min(r.server) AS server,
           min(r.scope) AS scope, min(r.project) AS project,
           min(r.environment) AS environment, min(r.resource) AS resource,
           min(r.deployment) AS deployment, count(*) AS n, sum(r.value) AS total,
           min(r.value) AS lo, max(r.value) AS hi
    FROM unnest($11::text[], $12::text[], $13::text[], $14::text[], $15::bigint[],
                $16::text[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[],
                $22::text[], $23::float8[])
         AS r(sample_id, namespace, series, tier, bucket_ms, metric, server, scope, project,
              environment, resource, deployment, value)
    JOIN inserted USING (sample_id)
    GROUP BY r.namespace, r.series, r.tier, r.bucket_ms, r.metric
)
INSERT INTO monitoring_rollups
    (namespace, series, tier, bucket_ms, metric, server, scope, project, environment,
     resource, deployment, n, total, lo, hi)
SELECT namespace, series, tier, bucket_ms, metric, server, scope, project, environment,
       resource, deployment, n, total, lo, hi
FROM contributions",
    upsert_rollup_tail!("namespace, series, tier, bucket_ms, metric")
);

/// The rollup read of one [`Access`], with the parameters of the samples' read, `$10` the
/// tier and `$4`, `$11` the two `scope` values of its [`RollupRead`].
macro_rules! select_rollup {
    ($access:literal) => {
        concat!(
            "SELECT series, server, scope, project, environment, resource, deployment,
                    bucket_ms, metric, n, total, lo, hi
             FROM monitoring_rollups WHERE namespace = $1 AND tier = $10 ",
            $access,
            " AND bucket_ms BETWEEN $2 AND $3
               AND scope IN ($4::text, $11::text)
               AND ($5::text IS NULL OR server = $5::text)
               AND ($6::text IS NULL OR project = $6::text)
               AND ($7::text IS NULL OR environment = $7::text)
               AND ($8::text IS NULL OR resource = $8::text)
               AND ($9::text IS NULL OR deployment = $9::text)
             ORDER BY bucket_ms, series, metric"
        )
    };
}

const ROLLUP_BY_RESOURCE: &str = select_rollup!("AND resource = $8::text");
const ROLLUP_BY_SERVER: &str = select_rollup!("AND server = $5::text");
const ROLLUP_BY_NAMESPACE: &str = select_rollup!("");

/// Per resource of the scope (container series), the contributor metrics summed over the
/// window; the parameters of [`select_rollup`].
const RESOURCE_USAGE: &str = "
SELECT resource, min(server), scope, project, environment, resource, NULL::text,
       min(bucket_ms), metric, sum(n)::bigint, sum(total), min(lo), max(hi)
FROM monitoring_rollups WHERE namespace = $1 AND tier = $10 AND scope IN ($4::text, $11::text)
   AND bucket_ms BETWEEN $2 AND $3
   AND metric IN ('containerCpuPercent', 'memoryUsedBytes')
   AND resource IS NOT NULL
   AND ($5::text IS NULL OR server = $5::text)
   AND ($6::text IS NULL OR project = $6::text)
   AND ($7::text IS NULL OR environment = $7::text)
   AND ($8::text IS NULL OR resource = $8::text)
   AND ($9::text IS NULL OR deployment = $9::text)
GROUP BY resource, scope, project, environment, metric";

/// Column arrays of the rollup contributions of a batch, for `unnest`.
#[derive(Default)]
struct Contributions {
    sample_ids: Vec<String>,
    namespaces: Vec<String>,
    series: Vec<String>,
    tiers: Vec<&'static str>,
    buckets: Vec<i64>,
    metrics: Vec<String>,
    servers: Vec<String>,
    scopes: Vec<String>,
    projects: Vec<Option<String>>,
    environments: Vec<Option<String>>,
    resources: Vec<Option<String>>,
    deployments: Vec<Option<String>>,
    values: Vec<f64>,
}

impl Contributions {
    /// Of each sample id's first occurrence: a repeated one is stored, and counted, once.
    fn of(samples: &[SampleRecord]) -> Self {
        let mut columns = Self::default();
        let mut seen = HashSet::new();
        for record in samples {
            if !seen.insert(record.sample.sample_id.as_str()) {
                continue;
            }
            for (tier, row) in contributions(record) {
                columns.sample_ids.push(record.sample.sample_id.clone());
                columns.namespaces.push(record.namespace.clone());
                columns.series.push(row.series);
                columns.tiers.push(tier.as_str());
                columns.buckets.push(row.bucket_ms);
                columns.metrics.push(row.metric);
                columns.servers.push(row.server);
                columns.scopes.push(row.scope);
                columns.projects.push(row.project);
                columns.environments.push(row.environment);
                columns.resources.push(row.resource);
                columns.deployments.push(row.deployment);
                columns.values.push(row.total);
            }
        }
        columns
    }
}

/// The read of one [`Access`]: `$access` is the predicate that picks the index.
macro_rules! select {
    ($access:literal) => {
        concat!(
            "SELECT sample FROM monitoring_samples
             WHERE namespace = $1 ",
            $access,
            " AND observed_ms BETWEEN $2 AND $3
               AND ($4::text IS NULL OR scope = $4::text)
               AND ($5::text IS NULL OR server = $5::text)
               AND ($6::text IS NULL OR project = $6::text)
               AND ($7::text IS NULL OR environment = $7::text)
               AND ($8::text IS NULL OR resource = $8::text)
               AND ($9::text IS NULL OR deployment = $9::text)
             ORDER BY observed_ms DESC, sample_id DESC LIMIT $10"
        )
    };
}

const BY_RESOURCE: &str = select!("AND resource = $8::text");
const BY_SERVER: &str = select!("AND server = $5::text");
const BY_NAMESPACE: &str = select!("");
const PRUNE: &str = "DELETE FROM monitoring_samples WHERE observed_ms < $1";
const PRUNE_ROLLUPS: &str = "DELETE FROM monitoring_rollups WHERE bucket_ms < $1";

/// Creates the samples' table; run under the migration lock, after the versioned migrations.
pub(super) async fn create_schema(
    transaction: &tokio_postgres::Transaction<'_>,
) -> Result<(), Failed> {
    transaction.batch_execute(SCHEMA).await?;
    Ok(transaction
        .batch_execute(crate::monitoring::POSTGRES_ROLLUPS_SCHEMA)
        .await?)
}

impl MonitoringStore for PostgresStore {
    fn record_samples(&self, samples: &[SampleRecord]) -> Result<(), StoreError> {
        if samples.is_empty() {
            return Ok(());
        }
        let rows = samples.iter().map(Row::of).collect::<Result<Vec<_>, _>>()?;
        let ids: Vec<&str> = rows.iter().map(|r| r.sample_id).collect();
        let namespaces: Vec<&str> = rows.iter().map(|r| r.namespace).collect();
        let servers: Vec<&str> = rows.iter().map(|r| r.server).collect();
        let scopes: Vec<&str> = rows.iter().map(|r| r.scope).collect();
        let projects: Vec<Option<&str>> = rows.iter().map(|r| r.project).collect();
        let environments: Vec<Option<&str>> = rows.iter().map(|r| r.environment).collect();
        let resources: Vec<Option<&str>> = rows.iter().map(|r| r.resource).collect();
        let deployments: Vec<Option<&str>> = rows.iter().map(|r| r.deployment).collect();
        let observed: Vec<i64> = rows.iter().map(|r| r.observed_ms).collect();
        let json: Vec<&str> = rows.iter().map(|r| r.sample.as_str()).collect();
        let c = Contributions::of(samples);
        self.block_on(self.run(async |connection| {
            let insert = connection.prepare(INSERT).await?;
            let params: [&(dyn ToSql + Sync); 23] = [
                &ids,
                &namespaces,
                &servers,
                &scopes,
                &projects,
                &environments,
                &resources,
                &deployments,
                &observed,
                &json,
                &c.sample_ids,
                &c.namespaces,
                &c.series,
                &c.tiers,
                &c.buckets,
                &c.metrics,
                &c.servers,
                &c.scopes,
                &c.projects,
                &c.environments,
                &c.resources,
                &c.deployments,
                &c.values,
            ];
            // One autocommitted statement: all rows or none. Running it again after a lost
            // reply is harmless (stored ids are skipped), so a retry on a new connection is.
            connection.client.execute(&insert, &params).await?;
            Ok(())
        }))
    }

    fn samples(&self, query: &SampleQuery) -> Result<Vec<MonitoringSample>, StoreError> {
        let sql = match Access::of(query) {
            Access::Resource => BY_RESOURCE,
            Access::Server => BY_SERVER,
            Access::Namespace => BY_NAMESPACE,
        };
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let scope = scope_filter(query.kind);
        let rows = self.block_on(self.run(async |connection| {
            let select = connection.prepare(sql).await?;
            let params: [&(dyn ToSql + Sync); 10] = [
                &query.namespace,
                &query.from_ms,
                &query.to_ms,
                &scope,
                &query.server,
                &query.project,
                &query.environment,
                &query.resource,
                &query.deployment,
                &limit,
            ];
            Ok(connection.client.query(&select, &params).await?)
        }))?;
        oldest_first(rows.iter().map(|row| row.get::<_, String>(0)))
    }

    fn prune_samples(&self, before_ms: i64) -> Result<usize, StoreError> {
        let removed = self.block_on(self.run(async |connection| {
            let prune = connection.prepare(PRUNE).await?;
            let removed = connection.client.execute(&prune, &[&before_ms]).await?;
            let prune = connection.prepare(PRUNE_ROLLUPS).await?;
            connection.client.execute(&prune, &[&before_ms]).await?;
            Ok(removed)
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
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

impl PostgresStore {
    fn read_rollup(
        &self,
        sql: &'static str,
        read: &RollupRead,
        tier: Tier,
    ) -> Result<Vec<RollupRow>, StoreError> {
        let filters = &read.filters;
        let tier = tier.as_str();
        let rows = self.block_on(self.run(async |connection| {
            let select = connection.prepare(sql).await?;
            let params: [&(dyn ToSql + Sync); 11] = [
                &filters.namespace,
                &filters.from_ms,
                &filters.to_ms,
                &read.scopes[0],
                &filters.server,
                &filters.project,
                &filters.environment,
                &filters.resource,
                &filters.deployment,
                &tier,
                &read.scopes[1],
            ];
            Ok(connection.client.query(&select, &params).await?)
        }))?;
        Ok(rows.iter().map(|row| rollup_row!(row)).collect())
    }
}
