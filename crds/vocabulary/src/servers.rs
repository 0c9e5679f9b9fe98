//! What a server is and runs: its edge proxy, its lifecycle and the facts gathered from it,
//! kept in a Server's spec and status and shown by the REST API.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Host port a server's edge proxy serves HTTP on unless told otherwise.
pub const PROXY_HTTP_PORT_DEFAULT: u16 = 80;
/// Host port a server's edge proxy serves HTTPS on unless told otherwise.
pub const PROXY_HTTPS_PORT_DEFAULT: u16 = 443;

/// Edge proxy run on a server.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyKind {
    None,
    #[default]
    Caddy,
    Traefik,
}

/// Whether a server takes deployments. Only an inactive server may be deleted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ServerLifecycle {
    #[default]
    Active,
    Inactive,
}

/// Facts gathered from a server. The strings are optional rather than defaulting to `""`:
/// Kubernetes 1.20 rejects a CRD whose schema has an empty-string default.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerFacts {
    /// Operating system, e.g. `Debian GNU/Linux 12 (bookworm)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// CPU architecture, e.g. `x86_64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Number of logical CPUs.
    #[serde(default)]
    pub cpus: i64,
    /// Total memory in bytes.
    #[serde(default)]
    pub memory_bytes: i64,
    /// Kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}
