//! Who changed what through the REST API: one row per object a REST write changed, with the
//! actor, the operation and the fields it changed (names only, never values that could be
//! secret). Kept in the observation store so "who turned off auto-deploy?" still has an answer
//! after the shim restarted; the objects' Kubernetes Events, the other half of the activity
//! feed, live in the API server.

use crate::StoreError;

/// One REST write of one object.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// Unique; also the tie-break of the order.
    pub id: String,
    pub namespace: String,
    /// When the write was answered, in Unix milliseconds.
    pub occurred_ms: i64,
    /// The kind of the object written (`Resource`, `Project`, …).
    pub object_kind: String,
    pub object_id: String,
    /// The resource the object is or belongs to (empty when none): the `resourceId` filter.
    pub resource: String,
    /// `user` or `deploy-token`.
    pub actor_kind: String,
    pub actor_id: String,
    /// The operation, as its route: `POST /resources/{resourceId}/auto-deploy`.
    pub action: String,
    /// JSON object: the changed field paths and, for flags, their new values.
    pub detail: String,
}

/// Which records to read, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    pub namespace: String,
    /// Only writes of this resource or its objects.
    pub resource: Option<String>,
    /// Only writes of this object.
    pub object: Option<String>,
    /// Only records older than this `(occurred_ms, id)`: the page cursor.
    pub before: Option<(i64, String)>,
    pub limit: usize,
}

/// Where REST writes are recorded: every [`ObservationStore`](crate::ObservationStore) keeps them.
pub trait AuditStore: Send + Sync {
    /// Adds the records, all or none; a record whose id is stored already is skipped.
    fn record_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError>;
    /// The records `query` selects, newest first, up to its limit.
    fn audit_records(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, StoreError>;
}

/// The same SQL suits SQLite and PostgreSQL (placeholders numbered for each).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit_records (
    id          TEXT   PRIMARY KEY,
    namespace   TEXT   NOT NULL,
    occurred_ms BIGINT NOT NULL,
    object_kind TEXT   NOT NULL,
    object_id   TEXT   NOT NULL,
    resource    TEXT   NOT NULL,
    actor_kind  TEXT   NOT NULL,
    actor_id    TEXT   NOT NULL,
    action      TEXT   NOT NULL,
    detail      TEXT   NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_records_by_time ON audit_records (namespace, occurred_ms, id);
CREATE INDEX IF NOT EXISTS audit_records_by_resource
    ON audit_records (namespace, resource, occurred_ms, id);
";

pub(crate) const INSERT: &str = "
INSERT INTO audit_records
    (id, namespace, occurred_ms, object_kind, object_id, resource, actor_kind, actor_id,
     action, detail)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
ON CONFLICT (id) DO NOTHING";

/// `?2`/`?3` empty: no filter; `?4`/`?5`: the cursor (`?4` = i64::MAX for none).
pub(crate) const SELECT: &str = "
SELECT id, namespace, occurred_ms, object_kind, object_id, resource, actor_kind, actor_id,
       action, detail
FROM audit_records
WHERE namespace = ?1
  AND (?2 = '' OR resource = ?2)
  AND (?3 = '' OR object_id = ?3)
  AND (occurred_ms < ?4 OR (occurred_ms = ?4 AND id < ?5))
ORDER BY occurred_ms DESC, id DESC
LIMIT ?6";

/// The query's parameters in the order of [`SELECT`].
pub(crate) fn select_params(query: &AuditQuery) -> (String, String, String, i64, String, i64) {
    let (before_ms, before_id) = query.before.clone().unwrap_or((i64::MAX, String::new()));
    (
        query.namespace.clone(),
        query.resource.clone().unwrap_or_default(),
        query.object.clone().unwrap_or_default(),
        before_ms,
        before_id,
        i64::try_from(query.limit).unwrap_or(i64::MAX),
    )
}
