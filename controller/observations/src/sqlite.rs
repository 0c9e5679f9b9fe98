//! The embedded observation store: one SQLite file shared by the controller (writes) and the
//! REST shim (reads). WAL mode lets the shim read while the controller writes.

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use berth_crds::progress::ProgressEvent;
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use super::health_history::oldest_first;
use super::{
    HealthHistoryStore, HealthObservation, HealthQuery, History, RetentionStore, StoreError,
    TimelineEntry, TimelineKey, TimelineStore,
};

mod access_failures;
mod attempts;
mod audit;
mod disk;
mod login_attempts;
mod monitoring;
mod terminal_sessions;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS deployment_timeline (
    sequence    INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace   TEXT    NOT NULL,
    resource    TEXT    NOT NULL,
    deployment  TEXT    NOT NULL,
    recorded_ms INTEGER NOT NULL,
    event       TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS deployment_timeline_by_attempt
    ON deployment_timeline (namespace, resource, deployment, sequence);
CREATE INDEX IF NOT EXISTS deployment_timeline_by_age
    ON deployment_timeline (recorded_ms);
CREATE TABLE IF NOT EXISTS health_history (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace   TEXT    NOT NULL,
    resource    TEXT    NOT NULL,
    observed_ms INTEGER NOT NULL,
    overall     TEXT    NOT NULL,
    summary     TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS health_history_by_resource
    ON health_history (namespace, resource, observed_ms);
CREATE INDEX IF NOT EXISTS health_history_by_age ON health_history (observed_ms);
";

/// Creates what is missing of the schema in one write transaction, which waits for another
/// process doing the same (two starting at once must not both migrate).
fn create_schema(connection: &mut Connection) -> Result<(), StoreError> {
    let transaction =
        connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    transaction.execute_batch(SCHEMA)?;
    transaction.execute_batch(crate::access_failures::SCHEMA)?;
    transaction.execute_batch(crate::disk::SCHEMA)?;
    transaction.execute_batch(crate::attempts::SCHEMA)?;
    transaction.execute_batch(crate::audit::SCHEMA)?;
    transaction.execute_batch(crate::terminal_sessions::SCHEMA)?;
    transaction.execute_batch(crate::login_attempts::SCHEMA)?;
    transaction.execute_batch(crate::monitoring::SCHEMA)?;
    monitoring::cluster_rollups(&transaction)?;
    transaction.execute_batch(crate::monitoring::SQLITE_ROLLUPS_SCHEMA)?;
    transaction.commit()?;
    Ok(())
}

/// How long a call waits for another connection's lock.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// Runs `attempt` again while SQLite answers "busy", for up to [`BUSY_WAIT`]. Processes
/// opening a new file at once race to switch it to WAL and create the schema, and SQLite
/// answers "busy" at once, without the busy timeout, where waiting could deadlock.
fn retry_while_busy<T>(
    mut attempt: impl FnMut() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let deadline = Instant::now() + BUSY_WAIT;
    loop {
        match attempt() {
            Err(StoreError::Sqlite(error))
                if error.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            outcome => return outcome,
        }
    }
}

/// A SQLite observation store.
pub struct SqliteStore {
    connection: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, and its directory.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let failed = |message: String| StoreError::Open {
            location: path.display().to_string(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
        }
        let mut connection = Connection::open(path).map_err(|e| failed(e.to_string()))?;
        // Two processes use the file: wait for the other's lock rather than fail.
        connection.busy_timeout(BUSY_WAIT)?;
        let mode: String = retry_while_busy(|| {
            Ok(connection.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?)
        })?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), %mode, "observation store not in WAL mode");
        }
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        retry_while_busy(|| create_schema(&mut connection))?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent; keep using it.
        self.connection
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl TimelineStore for SqliteStore {
    fn append(&self, key: &TimelineKey, events: &[ProgressEvent]) -> Result<(), StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(
                "INSERT INTO deployment_timeline
                     (namespace, resource, deployment, recorded_ms, event)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            let recorded = now_ms();
            for event in events {
                let json = serde_json::to_string(event)?;
                insert.execute(params![
                    key.namespace,
                    key.resource,
                    key.deployment,
                    recorded,
                    json
                ])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn read(
        &self,
        key: &TimelineKey,
        after: i64,
        limit: usize,
    ) -> Result<Vec<TimelineEntry>, StoreError> {
        let connection = self.connection();
        let mut select = connection.prepare_cached(
            "SELECT sequence, event FROM deployment_timeline
             WHERE namespace = ?1 AND resource = ?2 AND deployment = ?3 AND sequence > ?4
             ORDER BY sequence LIMIT ?5",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = select.query_map(
            params![key.namespace, key.resource, key.deployment, after, limit],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
        )?;
        let mut entries = Vec::new();
        for row in rows {
            let (sequence, json) = row?;
            entries.push(TimelineEntry {
                sequence,
                event: serde_json::from_str(&json)?,
            });
        }
        Ok(entries)
    }

    fn count(&self, key: &TimelineKey) -> Result<i64, StoreError> {
        let connection = self.connection();
        let count = connection
            .query_row(
                "SELECT COUNT(*) FROM deployment_timeline
                 WHERE namespace = ?1 AND resource = ?2 AND deployment = ?3",
                params![key.namespace, key.resource, key.deployment],
                |row| row.get::<_, i64>(0),
            )
            .optional()?;
        Ok(count.unwrap_or(0))
    }

    fn attempts(&self, namespace: &str, resource: &str) -> Result<Vec<String>, StoreError> {
        let connection = self.connection();
        let mut query = connection.prepare_cached(
            "SELECT DISTINCT deployment FROM deployment_timeline
             WHERE namespace = ?1 AND resource = ?2 ORDER BY deployment",
        )?;
        let names = query
            .query_map(params![namespace, resource], |row| row.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(names)
    }

    fn prune(&self, retention: Duration) -> Result<usize, StoreError> {
        let cutoff = now_ms() - i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let connection = self.connection();
        let removed = connection.execute(
            "DELETE FROM deployment_timeline WHERE recorded_ms < ?1",
            params![cutoff],
        )?;
        connection.execute(crate::attempts::PRUNE, params![cutoff])?;
        Ok(removed)
    }
}

impl HealthHistoryStore for SqliteStore {
    fn prune_health_history(&self, retention: Duration) -> Result<usize, StoreError> {
        let cutoff = now_ms() - i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let removed = self.connection().execute(
            "DELETE FROM health_history WHERE observed_ms < ?1",
            params![cutoff],
        )?;
        Ok(removed)
    }

    fn record_health(&self, observations: &[HealthObservation]) -> Result<(), StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(
                "INSERT INTO health_history (namespace, resource, observed_ms, overall, summary)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for observation in observations {
                insert.execute(params![
                    observation.namespace,
                    observation.resource,
                    observation.observed_ms,
                    observation.overall,
                    serde_json::to_string(&observation.summary)?,
                ])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    fn health_history(&self, query: &HealthQuery) -> Result<Vec<HealthObservation>, StoreError> {
        let connection = self.connection();
        let mut select = connection.prepare_cached(
            "SELECT id, observed_ms, overall, summary FROM health_history
             WHERE namespace = ?1 AND resource = ?2 AND observed_ms BETWEEN ?3 AND ?4
             ORDER BY observed_ms DESC, id DESC LIMIT ?5",
        )?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = select.query_map(
            params![
                query.namespace,
                query.resource,
                query.from_ms,
                query.to_ms,
                limit
            ],
            |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                ))
            },
        )?;
        let mut newest_first = Vec::new();
        for row in rows {
            let (id, observed_ms, overall, summary) = row?;
            newest_first.push(HealthObservation {
                id,
                namespace: query.namespace.clone(),
                resource: query.resource.clone(),
                observed_ms,
                overall,
                summary: serde_json::from_str(&summary)?,
            });
        }
        Ok(oldest_first(newest_first))
    }
}

// The behaviour both backends share is tested in `conformance`.
impl RetentionStore for SqliteStore {
    fn count_before(
        &self,
        namespace: &str,
        history: History,
        before_ms: i64,
    ) -> Result<u64, StoreError> {
        let count: i64 = self.connection().query_row(
            &history.count_sql(),
            params![namespace, before_ms],
            |row| row.get(0),
        )?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    fn delete_before(
        &self,
        namespace: &str,
        history: History,
        before_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        let mut statements = history.delete_sql().into_iter();
        let first = statements.next().expect("one statement at least");
        let deleted = transaction.execute(&first, params![namespace, before_ms])?;
        for sql in statements {
            transaction.execute(&sql, params![namespace, before_ms])?;
        }
        transaction.commit()?;
        Ok(deleted as u64)
    }

    fn forget_resource(&self, namespace: &str, resource: &str) -> Result<usize, StoreError> {
        const FORGET: [&str; 6] = [
            "DELETE FROM deployment_timeline WHERE namespace = ?1 AND resource = ?2",
            crate::attempts::FORGET,
            "DELETE FROM health_history WHERE namespace = ?1 AND resource = ?2",
            "DELETE FROM monitoring_samples WHERE namespace = ?1 AND resource = ?2",
            "DELETE FROM monitoring_rollups WHERE namespace = ?1 AND resource = ?2",
            "DELETE FROM access_failure_evidence WHERE namespace = ?1 AND resource = ?2",
        ];
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        let mut removed = 0;
        for sql in FORGET {
            removed += transaction.execute(sql, params![namespace, resource])?;
        }
        transaction.commit()?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_path_names_itself() {
        let error = match SqliteStore::open(Path::new("/proc/berth/store.sqlite")) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("opened a store under /proc"),
        };
        assert!(error.contains("/proc/berth/store.sqlite"), "{error}");
    }

    #[test]
    fn rollups_written_before_clustering_move_into_the_clustered_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE monitoring_rollups (
                     namespace TEXT NOT NULL, series TEXT NOT NULL, tier TEXT NOT NULL,
                     bucket_ms BIGINT NOT NULL, metric TEXT NOT NULL, server TEXT NOT NULL,
                     scope TEXT NOT NULL, project TEXT, environment TEXT, resource TEXT,
                     deployment TEXT, n BIGINT NOT NULL, total DOUBLE PRECISION NOT NULL,
                     lo DOUBLE PRECISION NOT NULL, hi DOUBLE PRECISION NOT NULL,
                     PRIMARY KEY (namespace, series, tier, bucket_ms, metric));
                 CREATE INDEX monitoring_rollups_by_resource
                     ON monitoring_rollups (namespace, tier, resource, bucket_ms);
                 INSERT INTO monitoring_rollups VALUES ('org-a', 'c1', 'hour', 0, 'load1',
                     'edge', 'resource', 'shop', 'prod', 'web', NULL, 2, 3.0, 1.0, 2.0);",
            )
            .unwrap();
        }
        for _ in 0..2 {
            let store = SqliteStore::open(&path).unwrap();
            let connection = store.connection();
            let sql: String = connection
                .query_row(
                    "SELECT sql FROM sqlite_master WHERE name = 'monitoring_rollups'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert!(sql.contains("WITHOUT ROWID"), "{sql}");
            let kept: (i64, f64) = connection
                .query_row(
                    "SELECT n, total FROM monitoring_rollups WHERE resource = 'web'",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!(kept, (2, 3.0), "the row moved, once");
        }
    }
}
