//! Access-failure evidence (spec §2.2 `resource-access-failure/v1`): what the edge proxy of a
//! server answered a request it could not serve, captured from its log by the controller and
//! looked up by request id through the shim. Short-lived by design: every record expires
//! [`ACCESS_FAILURE_RETENTION`] after its capture and is pruned after that.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use berth_crds::access_failure::AccessFailureEvidence;

use super::StoreError;

/// How long evidence stays readable after its capture.
pub const ACCESS_FAILURE_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// Table and indexes of the evidence, created when a store opens; the same SQL suits SQLite
/// and PostgreSQL.
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS access_failure_evidence (
    request_id  TEXT   PRIMARY KEY,
    namespace   TEXT   NOT NULL,
    server      TEXT   NOT NULL,
    resource    TEXT,
    hostname    TEXT   NOT NULL,
    path        TEXT   NOT NULL,
    captured_ms BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL,
    evidence    TEXT   NOT NULL
);
CREATE INDEX IF NOT EXISTS access_failure_evidence_by_resource
    ON access_failure_evidence (namespace, resource, captured_ms);
CREATE INDEX IF NOT EXISTS access_failure_evidence_by_expiry
    ON access_failure_evidence (expires_ms);
";

/// One captured failure and whose it is.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessFailureRecord {
    /// The organization namespace of the server whose edge proxy answered.
    pub namespace: String,
    /// The Server object's name.
    pub server: String,
    /// The resource whose route took the request; `None` for an unknown host.
    pub resource: Option<String>,
    /// When the controller captured it, in Unix milliseconds.
    pub captured_at_ms: i64,
    /// When it stops being readable, in Unix milliseconds.
    pub expires_at_ms: i64,
    pub evidence: AccessFailureEvidence,
}

impl AccessFailureRecord {
    /// A record captured at `captured_at_ms`, expiring after [`ACCESS_FAILURE_RETENTION`].
    pub fn captured(
        namespace: impl Into<String>,
        server: impl Into<String>,
        resource: Option<String>,
        captured_at_ms: i64,
        evidence: AccessFailureEvidence,
    ) -> Self {
        let retention = i64::try_from(ACCESS_FAILURE_RETENTION.as_millis()).unwrap_or(i64::MAX);
        Self {
            namespace: namespace.into(),
            server: server.into(),
            resource,
            captured_at_ms,
            expires_at_ms: captured_at_ms.saturating_add(retention),
            evidence,
        }
    }
}

/// Where evidence lives: every [`ObservationStore`](crate::ObservationStore) keeps it too. Calls
/// block, as every store call.
pub trait AccessFailureStore: Send + Sync {
    /// Stores `record` unless evidence of its request id is stored already (a log read twice
    /// after a reconnect); returns whether it was new.
    fn record_access_failure(&self, record: &AccessFailureRecord) -> Result<bool, StoreError>;
    /// The evidence of `request_id`, unless it expired.
    fn access_failure(&self, request_id: &str) -> Result<Option<AccessFailureRecord>, StoreError>;
    /// The most recently captured unexpired evidence of one resource.
    fn latest_access_failure(
        &self,
        namespace: &str,
        resource: &str,
    ) -> Result<Option<AccessFailureRecord>, StoreError>;
    /// Removes evidence expired at `now_ms`; returns how much went.
    fn prune_access_failures(&self, now_ms: i64) -> Result<usize, StoreError>;
}

/// The clock reads compare expiry with.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A stored row back into a record.
pub(crate) struct StoredRow {
    pub namespace: String,
    pub server: String,
    pub resource: Option<String>,
    pub captured_ms: i64,
    pub expires_ms: i64,
    pub evidence: String,
}

impl StoredRow {
    pub(crate) fn into_record(self) -> Result<AccessFailureRecord, StoreError> {
        Ok(AccessFailureRecord {
            namespace: self.namespace,
            server: self.server,
            resource: self.resource,
            captured_at_ms: self.captured_ms,
            expires_at_ms: self.expires_ms,
            evidence: serde_json::from_str(&self.evidence)?,
        })
    }
}

/// Columns every read selects, in [`StoredRow`]'s order.
pub(crate) const COLUMNS: &str = "namespace, server, resource, captured_ms, expires_ms, evidence";
