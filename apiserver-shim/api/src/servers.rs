//! Spec §4.10, servers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;
use crate::conditions::ConditionRecord;
use crate::limits::{DNS_LABEL_MAX, NAME_MAX, OBJECT_NAME_MAX, TCP_PORT_MAX};
use crate::validate::{Checked, FieldError, bounded, optional_text};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::credentials::SshCredentialKind;
pub use berth_vocabulary::servers::{
    PROXY_HTTP_PORT_DEFAULT, PROXY_HTTPS_PORT_DEFAULT, ProxyKind, ServerFacts, ServerLifecycle,
};

pub use crate::server_rollups::{
    DeploymentRollup, DeploymentStatusCount, DomainBindingStatus, DomainRollup, DomainStatusCount,
    ResourceRollup, ServerRollups,
};

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

/// Longest login name of a server.
pub const USERNAME_MAX: usize = 32;
/// Longest proxy image reference.
pub const PROXY_IMAGE_MAX: usize = 255;

impl CreateServer {
    /// Every rule the request can be checked by without the cluster.
    pub fn validate(&self) -> Checked {
        self.validate_target()?;
        self.validate_settings()
    }

    /// The rules of what the shim checks before it looks the credential up.
    pub fn validate_target(&self) -> Checked {
        bounded("name", &self.name, NAME_MAX)?;
        check_host("host", &self.host, OBJECT_NAME_MAX)?;
        bounded("credentialId", &self.credential_id, OBJECT_NAME_MAX)
    }

    /// The rules of the other fields: the shim checks them once the credential was found
    /// (an unknown credential is refused first).
    pub fn validate_settings(&self) -> Checked {
        optional_text("username", self.username.as_ref(), USERNAME_MAX)?;
        optional_text("providerKey", self.provider_key.as_ref(), DNS_LABEL_MAX)?;
        if let Some(domain) = &self.base_domain {
            check_host("baseDomain", domain, OBJECT_NAME_MAX)?;
        }
        if let Some(fingerprint) = &self.expected_host_key_fingerprint {
            check_fingerprint(fingerprint)?;
        }
        check_port("port", self.port)?;
        self.proxy.as_ref().map_or(Ok(()), ProxyInput::validate)
    }
}

impl ProxyInput {
    /// The ports are compared with the defaults filled in: the two must differ.
    pub fn validate(&self) -> Checked {
        optional_text("proxy.image", self.image.as_ref(), PROXY_IMAGE_MAX)?;
        check_port("proxy.httpPort", self.http_port)?;
        check_port("proxy.httpsPort", self.https_port)?;
        let http = self.http_port.unwrap_or(PROXY_HTTP_PORT_DEFAULT);
        let https = self.https_port.unwrap_or(PROXY_HTTPS_PORT_DEFAULT);
        if http == https {
            return Err(FieldError::new(
                "proxy.httpsPort",
                "proxy.httpPort and proxy.httpsPort must differ",
            ));
        }
        Ok(())
    }
}

/// A port of 1..=65535 (a `u16` already stops above).
fn check_port(field: &str, port: Option<u16>) -> Checked {
    if port == Some(0) {
        return Err(FieldError::new(
            field,
            format!("{field} must be from 1 to {TCP_PORT_MAX}"),
        ));
    }
    Ok(())
}

/// `expectedHostKeyFingerprint` as `ssh-keygen -l` prints it: `SHA256:` and 43 base64
/// characters (a final `=` allowed).
pub fn check_fingerprint(fingerprint: &str) -> Checked {
    let body = fingerprint.strip_prefix("SHA256:").unwrap_or_default();
    let body = body.strip_suffix('=').unwrap_or(body);
    let valid = body.len() == 43
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/');
    if !valid {
        return Err(FieldError::new(
            "expectedHostKeyFingerprint",
            "expectedHostKeyFingerprint must look like SHA256:… as `ssh-keygen -l` prints it",
        ));
    }
    Ok(())
}

/// Longest `idempotencyKey` of a server deletion.
pub const IDEMPOTENCY_KEY_MAX: usize = 255;

impl DeleteServer {
    pub fn validate(&self) -> Checked {
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )
    }
}

/// A DNS name or IP address of 1..=`max` characters: letters, digits, `.`, `-`, `:` (IPv6)
/// and `_`, not starting with `-` or `.` (it is passed to ssh).
pub fn check_host(field: &str, host: &str, max: usize) -> Checked {
    bounded(field, host, max)?;
    let valid = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'))
        && !host.starts_with(['-', '.']);
    if !valid {
        return Err(FieldError::new(
            field,
            format!("{field} must be a host name or IP address"),
        ));
    }
    Ok(())
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

/// A server as the REST API shows it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ServerRecord {
    pub id: String,
    pub name: String,
    pub host: String,
    pub port: i32,
    pub username: String,
    pub credential_id: String,
    pub provider_key: String,
    /// Always `single-server`: one host reached over SSH running Docker. (Defaults, as the
    /// other fields Appaloft's schema added, so that records of older shims still read.)
    #[serde(default)]
    pub target_kind: String,
    /// What Berth runs on the server: `deployment-runtime` and `artifact-builder` (images
    /// are built on the server's Docker).
    #[serde(default)]
    pub workload_roles: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_domain: Option<String>,
    /// `active` (takes deployments) or `inactive` (may be deleted).
    pub lifecycle_status: ServerLifecycle,
    /// When the server became inactive, as berth-controller saw it happen; absent while it is
    /// active, and for a server deactivated before Berth recorded the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<String>,
    /// The SSH credential the server logs in with, never its key (Appaloft's `credential`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<ServerCredential>,
    /// Whether the controller's last SSH connection succeeded.
    pub reachable: bool,
    /// The pinned SSH host key (`SHA256:…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_key_fingerprint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facts: Option<ServerFacts>,
    pub proxy: ProxyRecord,
    /// `Reachable`, `DockerReady`, `ProxyReady`, `Ready` and, while blocked, `DeletionBlocked`.
    pub conditions: Vec<ConditionRecord>,
    /// What keeps the server from being deleted (resources and deployments on it).
    pub delete_blockers: Vec<Blocker>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_contact_at: Option<String>,
    pub created_at: String,
}

/// The credential a server logs in with, as Appaloft's server summary shows it: what it is,
/// never the key.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServerCredential {
    /// `ssh-private-key`: a stored SshCredential (Berth has no `local-ssh-agent`).
    pub kind: SshCredentialKind,
    /// Id of the SshCredential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_id: Option<String>,
    /// Display name of the SshCredential; absent while the shim does not know it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_name: Option<String>,
    /// The login name the server uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Whether a public key could be derived from the credential's private key.
    pub public_key_configured: bool,
    /// Whether the credential's Secret holds a private key that parses.
    pub private_key_configured: bool,
}

/// The edge proxy of a server.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ProxyRecord {
    /// `caddy`, `traefik` or `none`.
    pub kind: ProxyKind,
    /// `ready`, `not-ready`, `unknown` (not checked yet), `unsupported` or `disabled`.
    pub status: String,
    pub image: String,
    pub http_port: i32,
    pub https_port: i32,
}

/// An object that keeps another from being deleted.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Blocker {
    /// `resource` or `deployment`.
    pub kind: String,
    pub id: String,
}

/// `GET /servers` (Appaloft's `listServersResponse`).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct ServerList {
    /// At most `limit` servers from `offset` on, oldest first.
    pub items: Vec<ServerRecord>,
    /// How many servers matched, whatever `limit` and `offset`.
    #[serde(default)]
    pub total: usize,
    /// The most `items` the answer could hold.
    #[serde(default)]
    pub limit: u64,
    /// How many matching servers were passed over before `items`.
    #[serde(default)]
    pub offset: u64,
}

/// The server as Appaloft's `servers.show/v1` nests it (`serverSummary`'s required fields).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ServerSummary {
    pub id: String,
    pub name: String,
    pub host: String,
    pub port: i32,
    pub provider_key: String,
    /// `single-server`.
    pub target_kind: String,
    /// `deployment-runtime` and `artifact-builder`.
    pub workload_roles: Vec<String>,
    /// `active` or `inactive`.
    pub lifecycle_status: ServerLifecycle,
    /// When the server became inactive; absent while it is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<String>,
    /// The SSH credential it logs in with, never the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<ServerCredential>,
    pub created_at: String,
}

/// `GET /servers/{serverId}`: Berth's record of the server, and Appaloft's `servers.show/v1`
/// (`schemaVersion`, `server`, `rollups`, `generatedAt`) beside it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ServerDetail {
    /// `servers.show/v1`.
    pub schema_version: String,
    /// The server as Appaloft summarizes it.
    pub server: ServerSummary,
    /// The resources, deployments and domain bindings on the server; left out when asked
    /// with `includeRollups=false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollups: Option<ServerRollups>,
    /// When this answer was made.
    pub generated_at: String,
    /// Berth's record, its fields at the top level.
    #[serde(flatten)]
    pub record: ServerRecord,
}

/// Appaloft's `servers.delete-check/v1`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteCheck {
    pub schema_version: String,
    pub server_id: String,
    /// `active` or `inactive`: only an inactive server may be deleted.
    pub lifecycle_status: String,
    pub eligible: bool,
    pub blockers: Vec<DeleteBlocker>,
    pub checked_at: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBlocker {
    /// Appaloft's kinds: `active-server`, `resource-placement`, `active-deployment`,
    /// `deployment-history`, `domain-binding`, `credential`, `terminal-session`…
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub related_entity_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub related_entity_type: Option<String>,
}

/// Appaloft's connectivity report.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ConnectivityReport {
    /// The registered server's id; empty for a draft.
    pub server_id: String,
    pub name: String,
    pub host: String,
    pub port: u16,
    pub provider_key: String,
    pub checked_at: String,
    /// `healthy` (every check passed), `degraded` (logged in, Docker missing) or `unreachable`.
    pub status: String,
    pub checks: Vec<Check>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// `tcp`, `ssh-handshake`, `authentication` or `docker`.
    pub name: String,
    /// `passed`, `failed` or `skipped`.
    pub status: String,
    pub message: String,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenameServer {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DraftConnectivityTest {
    pub server: DraftServer,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DraftServer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// A stored SSH credential (Berth's own shorthand for `credential.kind:
    /// stored-ssh-private-key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<DraftCredential>,
    /// The host key the server must show (`SHA256:…`); a different one fails the handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_host_key_fingerprint: Option<String>,
}

/// Appaloft's credential union.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DraftCredential {
    #[serde(rename_all = "camelCase")]
    StoredSshPrivateKey {
        credential_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        username: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    SshPrivateKey {
        private_key: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        username: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public_key: Option<String>,
    },
    LocalSshAgent {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        username: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(name: &str, host: &str, credential_id: &str) -> CreateServer {
        CreateServer {
            name: name.into(),
            host: host.into(),
            port: None,
            username: None,
            credential_id: credential_id.into(),
            provider_key: None,
            base_domain: None,
            expected_host_key_fingerprint: None,
            proxy: None,
        }
    }

    #[test]
    fn hosts_are_names_or_addresses() {
        for good in ["127.0.0.1", "::1", "edge-1.example.com", "a_b"] {
            assert!(check_host("host", good, 253).is_ok(), "{good}");
        }
        for bad in ["", "a b", "-x", ".x", "a/b"] {
            assert_eq!(check_host("host", bad, 253).unwrap_err().field, "host");
        }
    }

    #[test]
    fn a_new_server_names_the_field_it_refuses() {
        assert!(create("web 1", "203.0.113.7", "ssh-1").validate().is_ok());
        let long = "x".repeat(254);
        for (body, field) in [
            (create(&long[..121], "203.0.113.7", "ssh-1"), "name"),
            (create("web 1", "-oProxy", "ssh-1"), "host"),
            (create("web 1", &long, "ssh-1"), "host"),
            (create("web 1", "203.0.113.7", ""), "credentialId"),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
    }

    #[test]
    fn the_settings_of_a_new_server_name_the_field_they_break() {
        let with = |extra: serde_json::Value| -> CreateServer {
            let mut body = serde_json::json!({"name": "web", "host": "h", "credentialId": "c"});
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::from_value(body).unwrap()
        };
        let fingerprint = "SHA256:sapBa+aAx0JFnRqP2StynmT6VW/FBMEM2WJVvqgo3YY";
        let good = serde_json::json!({"username": "deploy", "providerKey": "hetzner",
            "baseDomain": "apps.example.com", "expectedHostKeyFingerprint": fingerprint,
            "port": 2222, "proxy": {"image": "caddy:2", "httpPort": 8080}});
        assert!(with(good).validate().is_ok());
        for (extra, field) in [
            (serde_json::json!({"username": "u".repeat(33)}), "username"),
            (serde_json::json!({"providerKey": ""}), "providerKey"),
            (serde_json::json!({"baseDomain": "a b"}), "baseDomain"),
            (
                serde_json::json!({"expectedHostKeyFingerprint": "MD5:aa"}),
                "expectedHostKeyFingerprint",
            ),
            (serde_json::json!({"port": 0}), "port"),
            (serde_json::json!({"proxy": {"image": ""}}), "proxy.image"),
            (
                serde_json::json!({"proxy": {"httpPort": 0}}),
                "proxy.httpPort",
            ),
            (
                serde_json::json!({"proxy": {"httpsPort": 0}}),
                "proxy.httpsPort",
            ),
            (
                serde_json::json!({"proxy": {"httpPort": 443}}),
                "proxy.httpsPort",
            ),
        ] {
            let error = with(extra.clone()).validate().unwrap_err();
            assert_eq!(error.field, field, "{extra}");
        }
    }

    #[test]
    fn a_deletion_key_is_bounded() {
        let delete = |key: Option<String>| DeleteServer {
            confirmation: None,
            idempotency_key: key,
        };
        assert!(delete(None).validate().is_ok());
        assert!(delete(Some("k-1".into())).validate().is_ok());
        let long = delete(Some("k".repeat(IDEMPOTENCY_KEY_MAX + 1)));
        assert_eq!(long.validate().unwrap_err().field, "idempotencyKey");
    }
}
