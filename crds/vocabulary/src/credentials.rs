//! The kinds of SSH credential: an SshCredential's `spec.kind` and the REST API's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::servers::ServerLifecycle;

/// Kind of SSH credential; the spec names only private keys.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SshCredentialKind {
    #[default]
    SshPrivateKey,
}

/// Which servers use a credential (spec §2.2 "SSH credential usage").
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshCredentialUsage {
    /// Number of servers using the credential.
    #[serde(default)]
    pub total_servers: i64,
    /// Number of active servers using the credential.
    #[serde(default)]
    pub active_servers: i64,
    /// Number of inactive servers using the credential.
    #[serde(default)]
    pub inactive_servers: i64,
    /// The servers using the credential.
    #[serde(default)]
    pub servers: Vec<SshCredentialServerUsage>,
}

/// One server using a credential.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshCredentialServerUsage {
    /// Id (object name) of the Server.
    pub server_id: String,
    /// Display name of the server.
    pub server_name: String,
    /// `active` or `inactive`.
    pub lifecycle_status: ServerLifecycle,
    /// Provider of the server, e.g. `generic-ssh`.
    pub provider_key: String,
    /// Host name or address of the server.
    pub host: String,
    /// Login name used on the server.
    pub username: String,
}
