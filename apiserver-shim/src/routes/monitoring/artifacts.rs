//! The artifacts of a runtime usage snapshot as they go on the wire: what holds the server's
//! disk (containers, images, volumes, the build cache), what says who owns each, and what the
//! snapshot could not measure.

use schemars::JsonSchema;
use serde::Serialize;

use super::Scope;

/// Spec §2.2 "Runtime artifact".
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// `active-runtime` (a running container), `docker-image`, `volume` or
    /// `docker-build-cache` (a server's whole build cache).
    pub kind: &'static str,
    pub ownership: &'static str,
    pub server_id: String,
    pub project_id: Option<String>,
    pub environment_id: Option<String>,
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
    pub destination_id: Option<String>,
    /// The container id, the image reference or the Docker volume name.
    pub runtime_id: Option<String>,
    /// Bytes on disk: a container's writable layer, an image with the layers it shares, a
    /// volume's contents, the whole build cache.
    pub bytes: Option<u64>,
    pub inode_count: Option<u64>,
    pub observed_at: String,
    pub evidence: Vec<Evidence>,
    /// `yes` when nothing uses it and no resource declares it, else `no` with the reason.
    pub reclaimable: &'static str,
    pub reclaim_blocked_reason: Option<String>,
    pub warnings: Vec<UsageWarning>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// `label` (a container label), `deployment-snapshot` (the attempt's status),
    /// `read-model` (a resource's spec) or `runtime-identity` (Docker's own report of what it
    /// holds).
    pub source: &'static str,
    pub key: String,
}

/// Spec §2.2 "Usage warning".
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UsageWarning {
    /// `partial-diagnostic`, …
    pub code: &'static str,
    pub message: String,
    pub scope: Option<Scope>,
    /// What was not measured: `cpu`, `memory`, `disk`, `inode`, `docker`, `network` or
    /// `ownership`.
    pub resource: Option<String>,
}
