//! Health history (spec §2.2 "Health history"): the controller records a resource's health
//! record when its overall state changes and periodically while it does not; the REST shim
//! reads them back by time window. Each row keeps the whole record as served (`summary`).

use std::time::Duration;

use serde_json::Value;

use crate::StoreError;

/// One recorded health observation of a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthObservation {
    /// Assigned by the store, increasing; ignored when recording.
    pub id: i64,
    pub namespace: String,
    pub resource: String,
    /// When the observation was made, in milliseconds since the Unix epoch.
    pub observed_ms: i64,
    /// The record's `overall` verdict, kept in a column of its own for queries.
    pub overall: String,
    /// The Resource health record (`resources.health/v1`) as it was.
    pub summary: Value,
}

/// Which observations of one resource to read: those made in `from_ms..=to_ms`, the latest
/// `limit` of them, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthQuery {
    pub namespace: String,
    pub resource: String,
    pub from_ms: i64,
    pub to_ms: i64,
    pub limit: usize,
}

/// Turns rows read newest first into the answer's order, oldest first.
pub(crate) fn oldest_first(mut newest_first: Vec<HealthObservation>) -> Vec<HealthObservation> {
    newest_first.reverse();
    newest_first
}

/// Where health observations are kept: the controller records, the shim reads by window.
pub trait HealthHistoryStore: Send + Sync {
    /// Adds health observations, all or none.
    fn record_health(&self, observations: &[HealthObservation]) -> Result<(), StoreError>;
    /// The observations `query` selects, oldest first.
    fn health_history(&self, query: &HealthQuery) -> Result<Vec<HealthObservation>, StoreError>;
    /// Removes health observations made more than `retention` ago; returns how many went.
    fn prune_health_history(&self, retention: Duration) -> Result<usize, StoreError>;
}
