//! Monitoring samples in the SQLite store.

use berth_crds::monitoring::MonitoringSample;
use rusqlite::params;

use super::SqliteTimeline;
use crate::TimelineError;
use crate::monitoring::{
    Access, MonitoringStore, Row, SampleQuery, SampleRecord, oldest_first, scope_filter,
};

const INSERT: &str = "
INSERT INTO monitoring_samples
    (sample_id, namespace, server, scope, project, environment, resource, deployment,
     observed_ms, sample)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
ON CONFLICT (sample_id) DO NOTHING";

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

impl MonitoringStore for SqliteTimeline {
    fn record_samples(&self, samples: &[SampleRecord]) -> Result<(), TimelineError> {
        let rows = samples.iter().map(Row::of).collect::<Result<Vec<_>, _>>()?;
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(INSERT)?;
            for row in &rows {
                insert.execute(params![
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
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn samples(&self, query: &SampleQuery) -> Result<Vec<MonitoringSample>, TimelineError> {
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

    fn prune_samples(&self, before_ms: i64) -> Result<usize, TimelineError> {
        let removed = self.connection().execute(
            "DELETE FROM monitoring_samples WHERE observed_ms < ?1",
            params![before_ms],
        )?;
        Ok(removed)
    }
}
