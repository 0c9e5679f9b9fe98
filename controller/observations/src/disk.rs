//! What takes a server's disk, by artifact (spec §2.2 "Runtime artifact"): the latest of each
//! server as its observer read it, one row per server replaced on every read, so the store
//! holds as many rows as there are servers however long Berth runs.

use berth_crds::monitoring::DiskArtifact;

use crate::StoreError;

/// One server's artifacts as read at `observed_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskRecord {
    pub namespace: String,
    pub server: String,
    pub observed_ms: i64,
    pub artifacts: Vec<DiskArtifact>,
}

/// Where servers' disk artifacts live: every [`ObservationStore`](crate::ObservationStore) keeps
/// them too.
pub trait DiskStore: Send + Sync {
    /// Replaces what is kept of `record`'s server.
    fn record_disk(&self, record: &DiskRecord) -> Result<(), StoreError>;
    /// The latest record of every server of `namespace`, by server name.
    fn disk(&self, namespace: &str) -> Result<Vec<DiskRecord>, StoreError>;
}

/// The same SQL suits SQLite and PostgreSQL (placeholders numbered for each).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS server_disk (
    namespace   TEXT   NOT NULL,
    server      TEXT   NOT NULL,
    observed_ms BIGINT NOT NULL,
    artifacts   TEXT   NOT NULL,
    PRIMARY KEY (namespace, server)
);
";

pub(crate) const UPSERT: &str = "
INSERT INTO server_disk (namespace, server, observed_ms, artifacts) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (namespace, server) DO UPDATE
    SET observed_ms = excluded.observed_ms, artifacts = excluded.artifacts";

pub(crate) const SELECT: &str =
    "SELECT server, observed_ms, artifacts FROM server_disk WHERE namespace = ?1 ORDER BY server";

/// A row read back.
pub(crate) fn record(
    namespace: &str,
    server: String,
    observed_ms: i64,
    artifacts: &str,
) -> Result<DiskRecord, StoreError> {
    Ok(DiskRecord {
        namespace: namespace.to_string(),
        server,
        observed_ms,
        artifacts: serde_json::from_str(artifacts)?,
    })
}
