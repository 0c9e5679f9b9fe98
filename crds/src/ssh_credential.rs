//! SshCredential: a reusable SSH private key for reaching servers (spec §2.2 "SSH credential").
//! The key material lives only in a Secret the credential references.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::{NAME_MAX, OBJECT_NAME_MAX};
use crate::server::{Server, ServerLifecycle};

/// Kind of SSH credential: a wire type too, defined in `berth-vocabulary`.
pub use berth_vocabulary::credentials::{
    SshCredentialKind, SshCredentialServerUsage, SshCredentialUsage,
};

/// A reusable SSH credential. Deleting it is refused while any server uses it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "SshCredential",
    namespaced,
    shortname = "sshcred",
    category = "berth",
    doc = "A reusable SSH credential; its private key lives only in the Secret it references.",
    status = "SshCredentialStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.name"}"#,
    printcolumn = r#"{"name":"Username","type":"string","jsonPath":".spec.username"}"#,
    printcolumn = r#"{"name":"Servers","type":"integer","jsonPath":".status.usage.totalServers"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SshCredentialSpec {
    /// Display name.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: String,
    /// Credential kind; only `ssh-private-key`.
    #[serde(default)]
    pub kind: SshCredentialKind,
    /// Login name used with this key when a server does not set its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub username: Option<String>,
    /// The Secret key holding the OpenSSH private key.
    pub private_key_secret_ref: PrivateKeySecretRef,
}

/// A key in a Secret in the credential's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrivateKeySecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub name: String,
    /// Key inside the Secret's data.
    #[serde(default = "default_private_key_key")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub key: String,
}

fn default_private_key_key() -> String {
    "privateKey".to_string()
}

/// What the platform observed about a credential.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshCredentialStatus {
    /// Whether a public key could be derived from the private key.
    #[serde(default)]
    pub public_key_configured: bool,
    /// Whether the referenced Secret holds a parseable private key.
    #[serde(default)]
    pub private_key_configured: bool,
    /// The OpenSSH public key line (not secret), for `authorized_keys`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// SHA-256 fingerprint of the public key, as `ssh-keygen -l` prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// When the private key last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotated_at: Option<Time>,
    /// Servers using this credential.
    #[serde(default)]
    pub usage: SshCredentialUsage,
    /// Why the credential cannot be deleted yet (the servers using it); empty when it can.
    #[serde(default)]
    pub delete_blockers: Vec<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the key is loaded.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// Reasons of the `Ready` condition, and of the Events, of an SshCredential.
pub mod reason {
    pub const KEY_LOADED: &str = "KeyLoaded";
    pub const SECRET_NOT_FOUND: &str = "SecretNotFound";
    pub const KEY_NOT_FOUND: &str = "KeyNotFound";
    pub const INVALID_KEY: &str = "InvalidKey";
}

/// The usage record of a credential from the servers that name it.
pub fn usage_of(credential_name: &str, servers: &[Server]) -> SshCredentialUsage {
    let mut servers: Vec<SshCredentialServerUsage> = servers
        .iter()
        .filter(|s| s.spec.credential_id == credential_name)
        .map(|s| SshCredentialServerUsage {
            server_id: s.name_any(),
            server_name: s.spec.name.clone().unwrap_or_else(|| s.name_any()),
            lifecycle_status: s.spec.lifecycle_status,
            provider_key: s.spec.provider_key.clone(),
            host: s.spec.host.clone(),
            username: s.spec.username.clone(),
        })
        .collect();
    servers.sort_by(|a, b| a.server_id.cmp(&b.server_id));
    let active = servers
        .iter()
        .filter(|s| s.lifecycle_status == ServerLifecycle::Active)
        .count() as i64;
    SshCredentialUsage {
        total_servers: servers.len() as i64,
        active_servers: active,
        inactive_servers: servers.len() as i64 - active,
        servers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ServerSpec;

    fn server(name: &str, credential: &str, lifecycle: ServerLifecycle) -> Server {
        let mut spec: ServerSpec = serde_json::from_value(serde_json::json!({
            "host": "203.0.113.9",
            "credentialId": credential,
        }))
        .unwrap();
        spec.lifecycle_status = lifecycle;
        Server::new(name, spec)
    }

    #[test]
    fn usage_counts_only_servers_naming_the_credential() {
        let servers = vec![
            server("b", "deploy-key", ServerLifecycle::Inactive),
            server("a", "deploy-key", ServerLifecycle::Active),
            server("c", "other-key", ServerLifecycle::Active),
        ];
        let usage = usage_of("deploy-key", &servers);
        assert_eq!(usage.total_servers, 2);
        assert_eq!(usage.active_servers, 1);
        assert_eq!(usage.inactive_servers, 1);
        assert_eq!(usage.servers[0].server_id, "a");
        assert_eq!(usage.servers[0].username, "root");
    }
}
