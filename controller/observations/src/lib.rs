//! The observation store (DESIGN §3 and §5): what Berth observes over time — deployment
//! timelines (every attempt's steps and build output), health history, monitoring samples,
//! access failures, audit — kept so it outlives the stream that showed it, the objects and
//! restarts of Berth. Entries hold only masked text.
//!
//! The controller records through an [`ObservationWriter`] (never blocking an attempt); the REST
//! shim reads the same store to stream build output and to serve past timelines. The store is a
//! SQLite file by default, or a PostgreSQL database several replicas share; [`open`] picks one
//! from a [`StoreLocation`].

mod access_failures;
mod attempts;
mod audit;
#[cfg(test)]
mod conformance;
mod disk;
mod health_history;
mod location;
mod login_attempts;
mod monitoring;
mod options;
mod postgres;
mod retention;
mod sqlite;
mod terminal_sessions;
mod writer;

use std::time::Duration;

use berth_crds::progress::ProgressEvent;

pub use access_failures::{
    ACCESS_FAILURE_RETENTION, AccessFailureRecord, AccessFailureStore, now_ms,
};
pub use attempts::{AttemptQuery, AttemptRecord, AttemptStore};
pub use audit::{AuditQuery, AuditRecord, AuditStore};
pub use disk::{DiskRecord, DiskStore};
pub use health_history::{HealthObservation, HealthQuery};
pub use location::{PostgresUrl, StoreLocation, mask_url, open};
pub use login_attempts::{LoginAttemptStore, LoginAttempts};
pub use monitoring::{
    CONTRIBUTOR_METRICS, Detail, MonitoringStore, RollupQuery, RollupRow, SampleQuery,
    SampleRecord, Tier,
};
pub use options::StoreOptions;
pub use postgres::PostgresStore;
pub use retention::{History, RetentionStore};
pub use sqlite::SqliteStore;
pub use terminal_sessions::{PendingTerminal, TerminalClaim, TerminalSessionStore};
pub use writer::ObservationWriter;

/// Name of the store's file in the data directory.
pub const FILE_NAME: &str = "observations.sqlite";
/// Output lines kept per attempt; beyond, one line says how many were left out.
pub const MAX_OUTPUT_LINES: usize = 5_000;

/// Which attempt a timeline belongs to: Deployment names are unique per namespace only, and
/// the resource is kept so a timeline is found (and authorized) through its resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimelineKey {
    pub namespace: String,
    pub resource: String,
    pub deployment: String,
}

impl TimelineKey {
    pub fn new(
        namespace: impl Into<String>,
        resource: impl Into<String>,
        deployment: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            resource: resource.into(),
            deployment: deployment.into(),
        }
    }
}

/// One stored entry; `sequence` increases in the order entries were recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    pub sequence: i64,
    pub event: ProgressEvent,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `location` is shown masked (no password).
    #[error("observation store {location}: {message}")]
    Open { location: String, message: String },
    #[error("observation store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("observation store: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("observation store: no database connection came free within {0:?}")]
    Exhausted(Duration),
    #[error("observation store: an entry could not be encoded: {0}")]
    Encoding(#[from] serde_json::Error),
}

/// Where timelines live: [`SqliteStore`] or [`PostgresStore`]. Every call blocks; make
/// them where blocking is allowed (`spawn_blocking`, a thread of its own). A store keeps
/// access-failure evidence ([`AccessFailureStore`]) and monitoring samples
/// ([`MonitoringStore`]) too, and the state shim replicas share: pending terminal sessions
/// ([`TerminalSessionStore`]) and login attempts ([`LoginAttemptStore`]).
pub trait ObservationStore:
    AccessFailureStore
    + AttemptStore
    + AuditStore
    + DiskStore
    + LoginAttemptStore
    + MonitoringStore
    + RetentionStore
    + TerminalSessionStore
    + Send
    + Sync
{
    /// Adds `events` to the end of `key`'s timeline, all or none.
    fn append(&self, key: &TimelineKey, events: &[ProgressEvent]) -> Result<(), StoreError>;
    /// Up to `limit` entries of `key`'s timeline recorded after `after` (0: from the start).
    fn read(
        &self,
        key: &TimelineKey,
        after: i64,
        limit: usize,
    ) -> Result<Vec<TimelineEntry>, StoreError>;
    /// How many entries `key`'s timeline holds.
    fn count(&self, key: &TimelineKey) -> Result<i64, StoreError>;
    /// The attempts of one resource that have a timeline, by Deployment name in order.
    fn attempts(&self, namespace: &str, resource: &str) -> Result<Vec<String>, StoreError>;
    /// Removes timeline entries recorded more than `retention` ago; returns how many went.
    fn prune(&self, retention: Duration) -> Result<usize, StoreError>;
    /// Forgets everything recorded of `resource` in `namespace` — its timelines, health
    /// history, monitoring samples and rollups, access-failure evidence — so a resource
    /// created again under the same name starts with no history. Returns the rows deleted.
    fn forget_resource(&self, namespace: &str, resource: &str) -> Result<usize, StoreError>;
    /// Adds health observations, all or none.
    fn record_health(&self, observations: &[HealthObservation]) -> Result<(), StoreError>;
    /// The observations `query` selects, oldest first.
    fn health_history(&self, query: &HealthQuery) -> Result<Vec<HealthObservation>, StoreError>;
    /// Removes health observations made more than `retention` ago; returns how many went.
    fn prune_health_history(&self, retention: Duration) -> Result<usize, StoreError>;
}
