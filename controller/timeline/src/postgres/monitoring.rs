//! Monitoring samples in the PostgreSQL store.

use berth_crds::monitoring::MonitoringSample;
use tokio_postgres::types::ToSql;

use super::{Failed, PostgresTimeline};
use crate::TimelineError;
use crate::monitoring::{
    Access, MonitoringStore, Row, SCHEMA, SampleQuery, SampleRecord, oldest_first, scope_filter,
};

/// One statement for a whole tick, however many containers it measured.
const INSERT: &str = "
INSERT INTO monitoring_samples
    (sample_id, namespace, server, scope, project, environment, resource, deployment,
     observed_ms, sample)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                     $7::text[], $8::text[], $9::bigint[], $10::text[])
ON CONFLICT (sample_id) DO NOTHING";

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

/// Creates the samples' table; run under the migration lock, after the versioned migrations.
pub(super) async fn create_schema(
    transaction: &tokio_postgres::Transaction<'_>,
) -> Result<(), Failed> {
    Ok(transaction.batch_execute(SCHEMA).await?)
}

impl MonitoringStore for PostgresTimeline {
    fn record_samples(&self, samples: &[SampleRecord]) -> Result<(), TimelineError> {
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
        self.block_on(self.run(async |connection| {
            let insert = connection.prepare(INSERT).await?;
            let params: [&(dyn ToSql + Sync); 10] = [
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
            ];
            // One autocommitted statement: all rows or none. Running it again after a lost
            // reply is harmless (stored ids are skipped), so a retry on a new connection is.
            connection.client.execute(&insert, &params).await?;
            Ok(())
        }))
    }

    fn samples(&self, query: &SampleQuery) -> Result<Vec<MonitoringSample>, TimelineError> {
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

    fn prune_samples(&self, before_ms: i64) -> Result<usize, TimelineError> {
        let removed = self.block_on(self.run(async |connection| {
            let prune = connection.prepare(PRUNE).await?;
            Ok(connection.client.execute(&prune, &[&before_ms]).await?)
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}
