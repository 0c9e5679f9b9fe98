//! The shared observation store: one PostgreSQL database for every controller replica and
//! shim. What must hold across processes is left to the database: appends to one timeline
//! serialize on a transaction-scoped advisory lock, so a reader paging by `sequence` never
//! skips an entry committed late; migrations run under another, so replicas starting together
//! create the schema once.
//!
//! The traits are synchronous and called from blocking threads; the driver is async, so each
//! store drives its connections on a small runtime of its own.

use std::time::Duration;

use berth_crds::progress::ProgressEvent;
use tokio::runtime::Runtime;
use tokio_postgres::Config;
use tokio_postgres::types::ToSql;

use super::health_history::oldest_first;
use super::{
    HealthHistoryStore, HealthObservation, HealthQuery, PostgresUrl, StoreError, TimelineEntry,
    TimelineKey, TimelineStore,
};
use pool::{Connection, Failed, Pool};

mod access_failures;
mod attempts;
mod audit;
mod disk;
mod login_attempts;
mod monitoring;
mod pool;
mod retention;
mod terminal_sessions;
mod tls;

pub use tls::UncheckedChain;

/// Connection timeout when the URL sets none.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Advisory lock held while migrating ("berth_ob").
const MIGRATION_LOCK: i64 = 0x6265_7274_685f_6f62;

const MIGRATIONS_TABLE: &str = "
CREATE TABLE IF NOT EXISTS berth_schema_migrations (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// Schema changes in order; version N is `MIGRATIONS[N - 1]`. Append, never edit.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE deployment_timeline (
    sequence    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace   text   NOT NULL,
    resource    text   NOT NULL,
    deployment  text   NOT NULL,
    recorded_ms bigint NOT NULL,
    event       text   NOT NULL
);
CREATE INDEX deployment_timeline_by_attempt
    ON deployment_timeline (namespace, resource, deployment, sequence);
CREATE INDEX deployment_timeline_by_age ON deployment_timeline (recorded_ms);
",
    "
CREATE TABLE health_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace   text   NOT NULL,
    resource    text   NOT NULL,
    observed_ms bigint NOT NULL,
    overall     text   NOT NULL,
    summary     text   NOT NULL
);
CREATE INDEX health_history_by_resource ON health_history (namespace, resource, observed_ms);
CREATE INDEX health_history_by_age ON health_history (observed_ms);
",
];

/// Kubernetes names hold no `/`, so the joined key names one timeline.
const LOCK_TIMELINE: &str = "SELECT pg_advisory_xact_lock(hashtextextended(concat_ws('/', $1::text, $2::text, $3::text), 0))";
/// The database's clock times every entry, so replicas with skewed clocks prune alike.
/// Rows are numbered in the order of the batch.
const INSERT: &str = "
INSERT INTO deployment_timeline (namespace, resource, deployment, recorded_ms, event)
SELECT $1, $2, $3, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, batch.event
FROM unnest($4::text[]) WITH ORDINALITY AS batch(event, position)
ORDER BY batch.position";
const READ: &str = "
SELECT sequence, event FROM deployment_timeline
WHERE namespace = $1 AND resource = $2 AND deployment = $3 AND sequence > $4
ORDER BY sequence LIMIT $5";
const COUNT: &str = "
SELECT COUNT(*) FROM deployment_timeline
WHERE namespace = $1 AND resource = $2 AND deployment = $3";
const ATTEMPTS: &str = "
SELECT DISTINCT deployment FROM deployment_timeline
WHERE namespace = $1 AND resource = $2 ORDER BY deployment";
const PRUNE: &str = "
DELETE FROM deployment_timeline
WHERE recorded_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1";
/// Removed attempts go with the timelines' retention.
const PRUNE_ATTEMPTS: &str = "
DELETE FROM deployment_attempts WHERE removed
    AND created_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1";
const PRUNE_HEALTH: &str = "
DELETE FROM health_history
WHERE observed_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $1";
const INSERT_HEALTH: &str = "
INSERT INTO health_history (namespace, resource, observed_ms, overall, summary)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[])";
const HEALTH_HISTORY: &str = "
SELECT id, observed_ms, overall, summary FROM health_history
WHERE namespace = $1 AND resource = $2 AND observed_ms BETWEEN $3 AND $4
ORDER BY observed_ms DESC, id DESC LIMIT $5";

/// A PostgreSQL observation store.
pub struct PostgresStore {
    /// `None` only while dropping.
    runtime: Option<Runtime>,
    pool: Pool,
}

impl PostgresStore {
    /// Connects to the database at `url` and brings its schema up to date.
    pub fn open(url: &PostgresUrl) -> Result<Self, StoreError> {
        let failed = |message: String| StoreError::Open {
            location: url.to_string(),
            message,
        };
        let (driver_url, tls) = tls::split(url.expose()).map_err(failed)?;
        let mut config: Config = driver_url
            .parse()
            .map_err(|e: tokio_postgres::Error| failed(super::with_causes(&e)))?;
        config.ssl_mode(tls.mode.driver_mode());
        let connector = tls::MakeRustls::new(&tls).map_err(failed)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("berth");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("berth-postgres")
            .enable_all()
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let store = Self {
            runtime: Some(runtime),
            pool: Pool::new(config, connector),
        };
        store
            .block_on(store.migrate())
            .map_err(|e| failed(e.to_string()))?;
        Ok(store)
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime
            .as_ref()
            .expect("the runtime lives until the store is dropped")
            .block_on(future)
    }

    /// Runs `operation` on a pooled connection. When the connection turns out lost (the
    /// server restarted, a proxy dropped it while idle) it runs once more on a new one,
    /// unless the operation says its failure may have committed.
    async fn run<T>(
        &self,
        mut operation: impl AsyncFnMut(&mut Connection) -> Result<T, Failed>,
    ) -> Result<T, StoreError> {
        let mut lease = self.pool.get().await?;
        let failed = match operation(lease.connection()).await {
            Ok(value) => return Ok(value),
            Err(failed) => failed,
        };
        if !lease.connection_lost(&failed.error) {
            return Err(failed.error.into());
        }
        lease.discard();
        drop(lease);
        // The idle connections most likely went the same way.
        self.pool.clear_idle();
        if !failed.retry {
            return Err(failed.error.into());
        }
        let mut lease = self.pool.get().await?;
        operation(lease.connection())
            .await
            .map_err(|failed| failed.error.into())
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        self.run(async |connection| {
            let transaction = connection.client.transaction().await?;
            transaction
                .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await?;
            transaction.batch_execute(MIGRATIONS_TABLE).await?;
            let applied: i32 = transaction
                .query_one(
                    "SELECT COALESCE(max(version), 0) FROM berth_schema_migrations",
                    &[],
                )
                .await?
                .get(0);
            for (version, sql) in (1..).zip(MIGRATIONS).skip(applied.max(0) as usize) {
                transaction.batch_execute(sql).await?;
                transaction
                    .execute(
                        "INSERT INTO berth_schema_migrations (version) VALUES ($1)",
                        &[&version],
                    )
                    .await?;
            }
            // Kept apart from the versioned list (idempotent SQL) so branches adding
            // migrations of their own do not collide on a version number.
            access_failures::create_schema(&transaction).await?;
            monitoring::create_schema(&transaction).await?;
            transaction.batch_execute(crate::disk::SCHEMA).await?;
            transaction.batch_execute(crate::attempts::SCHEMA).await?;
            transaction.batch_execute(crate::audit::SCHEMA).await?;
            transaction
                .batch_execute(crate::terminal_sessions::SCHEMA)
                .await?;
            transaction
                .batch_execute(crate::login_attempts::SCHEMA)
                .await?;
            if applied as usize > MIGRATIONS.len() {
                tracing::warn!(
                    applied,
                    known = MIGRATIONS.len(),
                    "the observation store's schema is newer than this Berth"
                );
            }
            transaction.commit().await.map_err(Failed::maybe_committed)
        })
        .await
    }
}

impl PostgresStore {
    /// Runs a pruning statement whose one parameter is the retention in milliseconds.
    fn delete_older(&self, sql: &'static str, retention: Duration) -> Result<usize, StoreError> {
        let retention = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let removed = self.block_on(self.run(async |connection| {
            let prune = connection.prepare(sql).await?;
            Ok(connection.client.execute(&prune, &[&retention]).await?)
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which async code may not do, and the last
        // handle to a store may well go in async code.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl TimelineStore for PostgresStore {
    fn append(&self, key: &TimelineKey, events: &[ProgressEvent]) -> Result<(), StoreError> {
        let events = events
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()?;
        self.block_on(self.run(async |connection| {
            let lock = connection.prepare(LOCK_TIMELINE).await?;
            let insert = connection.prepare(INSERT).await?;
            let transaction = connection.client.transaction().await?;
            transaction
                .execute(&lock, &[&key.namespace, &key.resource, &key.deployment])
                .await?;
            transaction
                .execute(
                    &insert,
                    &[&key.namespace, &key.resource, &key.deployment, &events],
                )
                .await?;
            transaction.commit().await.map_err(Failed::maybe_committed)
        }))
    }

    fn read(
        &self,
        key: &TimelineKey,
        after: i64,
        limit: usize,
    ) -> Result<Vec<TimelineEntry>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.block_on(self.run(async |connection| {
            let read = connection.prepare(READ).await?;
            let params: [&(dyn ToSql + Sync); 5] = [
                &key.namespace,
                &key.resource,
                &key.deployment,
                &after,
                &limit,
            ];
            Ok(connection.client.query(&read, &params).await?)
        }))?;
        rows.iter()
            .map(|row| {
                Ok(TimelineEntry {
                    sequence: row.get(0),
                    event: serde_json::from_str(row.get(1))?,
                })
            })
            .collect()
    }

    fn count(&self, key: &TimelineKey) -> Result<i64, StoreError> {
        self.block_on(self.run(async |connection| {
            let count = connection.prepare(COUNT).await?;
            let attempt: [&(dyn ToSql + Sync); 3] =
                [&key.namespace, &key.resource, &key.deployment];
            Ok(connection.client.query_one(&count, &attempt).await?.get(0))
        }))
    }

    fn attempts(&self, namespace: &str, resource: &str) -> Result<Vec<String>, StoreError> {
        let rows = self.block_on(self.run(async |connection| {
            let attempts = connection.prepare(ATTEMPTS).await?;
            Ok(connection
                .client
                .query(&attempts, &[&namespace, &resource])
                .await?)
        }))?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    fn prune(&self, retention: Duration) -> Result<usize, StoreError> {
        let removed = self.delete_older(PRUNE, retention)?;
        self.delete_older(PRUNE_ATTEMPTS, retention)?;
        Ok(removed)
    }
}

impl HealthHistoryStore for PostgresStore {
    fn prune_health_history(&self, retention: Duration) -> Result<usize, StoreError> {
        self.delete_older(PRUNE_HEALTH, retention)
    }

    fn record_health(&self, observations: &[HealthObservation]) -> Result<(), StoreError> {
        let column = |f: fn(&HealthObservation) -> String| -> Vec<String> {
            observations.iter().map(f).collect()
        };
        let namespaces = column(|o| o.namespace.clone());
        let resources = column(|o| o.resource.clone());
        let overall = column(|o| o.overall.clone());
        let observed: Vec<i64> = observations.iter().map(|o| o.observed_ms).collect();
        let summaries = observations
            .iter()
            .map(|o| serde_json::to_string(&o.summary))
            .collect::<Result<Vec<_>, _>>()?;
        self.block_on(self.run(async |connection| {
            let insert = connection.prepare(INSERT_HEALTH).await?;
            let params: [&(dyn ToSql + Sync); 5] =
                [&namespaces, &resources, &observed, &overall, &summaries];
            // One autocommitted statement: all rows or none; a lost reply may hide a commit,
            // so it is never run twice.
            connection
                .client
                .execute(&insert, &params)
                .await
                .map_err(Failed::maybe_committed)?;
            Ok(())
        }))
    }

    fn health_history(&self, query: &HealthQuery) -> Result<Vec<HealthObservation>, StoreError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = self.block_on(self.run(async |connection| {
            let select = connection.prepare(HEALTH_HISTORY).await?;
            let params: [&(dyn ToSql + Sync); 5] = [
                &query.namespace,
                &query.resource,
                &query.from_ms,
                &query.to_ms,
                &limit,
            ];
            Ok(connection.client.query(&select, &params).await?)
        }))?;
        let newest_first = rows
            .iter()
            .map(|row| {
                Ok(HealthObservation {
                    id: row.get(0),
                    namespace: query.namespace.clone(),
                    resource: query.resource.clone(),
                    observed_ms: row.get(1),
                    overall: row.get(2),
                    summary: serde_json::from_str(row.get(3))?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(oldest_first(newest_first))
    }
}

/// SQLite's numbered placeholders (`?1`) as PostgreSQL's (`$1`).
fn numbered(sql: &str) -> String {
    sql.replace('?', "$")
}
