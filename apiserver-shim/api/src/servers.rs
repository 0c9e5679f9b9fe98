//! Spec §4.10, servers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;

/// An empty object (or no body).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct NoBody {}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteServer {
    /// Must carry `serverId` equal to the server being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// Repeating a delete with the same key (within 24 hours) returns the same result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// Edge proxy run on a server.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyKind {
    None,
    #[default]
    Caddy,
    Traefik,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateServer {
    /// Display name (1-120 characters).
    pub name: String,
    /// Host name or IP address sshd listens on.
    pub host: String,
    /// SSH port; 22 when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Login name; the credential's username, else `root`, when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The SSH credential to log in with (in the caller's organization).
    pub credential_id: String,
    /// Provider of the server; `generic-ssh` when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    /// Base domain for generated access URLs, e.g. `apps.example.com`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_domain: Option<String>,
    /// Pins the host key up front (`SHA256:…`); otherwise the key seen first is pinned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_host_key_fingerprint: Option<String>,
    /// Edge proxy settings; Caddy on ports 80 and 443 when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyInput>,
}

/// Edge proxy settings of a new server.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProxyInput {
    /// `caddy` (default), `traefik` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ProxyKind>,
    /// Container image of the proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_port: Option<u16>,
}
