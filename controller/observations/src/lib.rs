//! The observation store (DESIGN §3 and §5): what Berth observes over time — deployment
//! timelines (every attempt's steps and build output), health history, monitoring samples,
//! access failures, audit — kept so it outlives the stream that showed it, the objects and
//! restarts of Berth. Entries hold only masked text.
//!
//! The controller records through an [`ObservationWriter`] (never blocking an attempt); the
//! REST shim reads the same store to stream build output and to serve past timelines. Each sees
//! the store through the traits it uses: [`ControllerStore`] and [`ShimStore`]. The store is a
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
mod timeline;
mod writer;

use std::time::Duration;

pub use access_failures::{
    ACCESS_FAILURE_RETENTION, AccessFailureRecord, AccessFailureStore, now_ms,
};
pub use attempts::{AttemptQuery, AttemptRecord, AttemptStore};
pub use audit::{AuditQuery, AuditRecord, AuditStore};
pub use disk::{DiskRecord, DiskStore};
pub use health_history::{HealthHistoryStore, HealthObservation, HealthQuery};
pub use location::{PostgresUrl, StoreLocation, mask_url, open};
pub use login_attempts::{LoginAttemptStore, LoginAttempts};
pub use monitoring::{
    CONTRIBUTOR_METRICS, Detail, MonitoringStore, RollupQuery, RollupRow, SampleQuery,
    SampleRecord, Tier,
};
pub use options::StoreOptions;
pub use postgres::{PostgresStore, UncheckedChain};
pub use retention::{History, RetentionStore};
pub use sqlite::SqliteStore;
pub use terminal_sessions::{
    OpenedTerminal, PendingTerminal, TerminalClaim, TerminalSessionStore, TerminalState,
};
pub use timeline::{TimelineEntry, TimelineKey, TimelineStore};
pub use writer::ObservationWriter;

/// Name of the store's file in the data directory.
pub const FILE_NAME: &str = "observations.sqlite";
/// Output lines kept per attempt; beyond, one line says how many were left out.
pub const MAX_OUTPUT_LINES: usize = 5_000;

/// Why a call to the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `location` is shown masked (no password).
    #[error("observation store {location}: {message}")]
    Open { location: String, message: String },
    #[error("observation store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("observation store: {}", with_causes(.0))]
    Postgres(#[from] tokio_postgres::Error),
    #[error("observation store: no database connection came free within {0:?}")]
    Exhausted(Duration),
    #[error("observation store: an entry could not be encoded: {0}")]
    Encoding(#[from] serde_json::Error),
}

/// `error` and each of its causes, `outer: inner: …`: tokio-postgres shows only its kind ("db
/// error", "error performing TLS handshake"), the why is in the causes.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

/// What the controller uses of the store: it appends timelines and health observations (through
/// an [`ObservationWriter`]), records monitoring samples, disk usage and access failures, and
/// deletes history (retention, deleted resources). Every call blocks; make them where blocking
/// is allowed (`spawn_blocking`, a thread of its own).
pub trait ControllerStore:
    TimelineStore
    + HealthHistoryStore
    + AccessFailureStore
    + DiskStore
    + MonitoringStore
    + RetentionStore
    + Send
    + Sync
{
}

impl<S> ControllerStore for S where
    S: TimelineStore
        + HealthHistoryStore
        + AccessFailureStore
        + DiskStore
        + MonitoringStore
        + RetentionStore
        + Send
        + Sync
{
}

/// What the REST shim uses of the store: it reads timelines, health history, monitoring
/// samples, disk usage and access failures, and keeps what its replicas share — removed
/// attempts ([`AttemptStore`]), audit records ([`AuditStore`]), login attempts
/// ([`LoginAttemptStore`]) and terminal sessions ([`TerminalSessionStore`]). Every
/// call blocks, as [`ControllerStore`]'s do.
pub trait ShimStore:
    TimelineStore
    + HealthHistoryStore
    + AccessFailureStore
    + AttemptStore
    + AuditStore
    + DiskStore
    + LoginAttemptStore
    + MonitoringStore
    + TerminalSessionStore
    + Send
    + Sync
{
}

impl<S> ShimStore for S where
    S: TimelineStore
        + HealthHistoryStore
        + AccessFailureStore
        + AttemptStore
        + AuditStore
        + DiskStore
        + LoginAttemptStore
        + MonitoringStore
        + TerminalSessionStore
        + Send
        + Sync
{
}

/// The whole store, [`SqliteStore`] or [`PostgresStore`], as [`open`] returns it: an
/// `Arc<dyn ObservationStore>` coerces to the `Arc<dyn ControllerStore>` or
/// `Arc<dyn ShimStore>` each process keeps.
pub trait ObservationStore: ControllerStore + ShimStore {}

impl<S: ControllerStore + ShimStore> ObservationStore for S {}
