//! Server: a machine Berth deploys to over SSH and Docker (spec §2.2, §3 "Server").

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::{NAME_MAX, OBJECT_NAME_MAX, TCP_PORT_MAX};

/// Default edge proxy image, built locally from Debian's `caddy` package.
pub const DEFAULT_PROXY_IMAGE: &str = "berth/edge-caddy:2.6.2";

/// Edge proxy run on a server, its lifecycle and its facts: wire types too, defined in
/// `berth-vocabulary`.
pub use berth_vocabulary::servers::{
    PROXY_HTTP_PORT_DEFAULT, PROXY_HTTPS_PORT_DEFAULT, ProxyKind, ServerFacts, ServerLifecycle,
};

/// A server reached over SSH. Deleting it is refused until it is inactive and its delete
/// blockers are clear.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Server",
    namespaced,
    shortname = "bsrv",
    category = "berth",
    doc = "A server Berth deploys to over SSH and Docker, with its edge proxy.",
    status = "ServerStatus",
    printcolumn = r#"{"name":"Host","type":"string","jsonPath":".spec.host"}"#,
    printcolumn = r#"{"name":"Reachable","type":"boolean","jsonPath":".status.reachable"}"#,
    printcolumn = r#"{"name":"Docker","type":"string","jsonPath":".status.dockerVersion"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ServerSpec {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub name: Option<String>,
    /// Host name or IP address sshd listens on.
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub host: String,
    /// SSH port.
    #[serde(default = "default_ssh_port")]
    #[schemars(range(min = 1, max = TCP_PORT_MAX))]
    pub port: i32,
    /// Login name.
    #[serde(default = "default_username")]
    #[schemars(length(min = 1))]
    pub username: String,
    /// Id (object name) of the SshCredential used to log in.
    #[schemars(length(min = 1))]
    pub credential_id: String,
    /// Provider of the server, e.g. `generic-ssh`.
    #[serde(default = "default_provider_key")]
    #[schemars(length(min = 1))]
    pub provider_key: String,
    /// Desired lifecycle: `active` takes deployments, `inactive` does not and may be deleted.
    #[serde(default)]
    pub lifecycle_status: ServerLifecycle,
    /// Base domain for generated access URLs, e.g. `apps.example.com`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub base_domain: Option<String>,
    /// Pins the server's SSH host key (`SHA256:…`, as `ssh-keygen -l` prints it). Without it the
    /// key seen on first contact is pinned in status; either way a different key is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^SHA256:[A-Za-z0-9+/]{43}=?$"))]
    pub expected_host_key_fingerprint: Option<String>,
    /// Path of the Docker socket on the server.
    #[serde(default = "default_docker_socket_path")]
    #[schemars(length(min = 1), regex(pattern = r"^/"))]
    pub docker_socket_path: String,
    /// Edge proxy run on the server.
    #[serde(default)]
    pub proxy: ServerProxy,
}

/// The edge proxy Berth runs on a server.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerProxy {
    /// `caddy` (default), `traefik` or `none`.
    #[serde(default)]
    pub kind: ProxyKind,
    /// Container image of the proxy.
    #[serde(default = "default_proxy_image")]
    #[schemars(length(min = 1))]
    pub image: String,
    /// Host port the proxy serves HTTP on.
    #[serde(default = "default_http_port")]
    #[schemars(range(min = 1, max = TCP_PORT_MAX))]
    pub http_port: i32,
    /// Host port the proxy serves HTTPS on.
    #[serde(default = "default_https_port")]
    #[schemars(range(min = 1, max = TCP_PORT_MAX))]
    pub https_port: i32,
}

/// Condition types of a Server.
pub mod conditions {
    pub const REACHABLE: &str = "Reachable";
    pub const DOCKER_READY: &str = "DockerReady";
    pub const PROXY_READY: &str = "ProxyReady";
}

/// Condition reasons of a Server (remote failures use `berth_remote::error::reason`).
pub mod reason {
    pub const CONNECTED: &str = "Connected";
    pub const CREDENTIAL_NOT_READY: &str = "CredentialNotReady";
    pub const NOT_CONNECTED: &str = "NotConnected";
    pub const DOCKER_RESPONDING: &str = "DockerResponding";
    pub const DOCKER_NOT_READY: &str = "DockerNotReady";
    pub const PROXY_RUNNING: &str = "ProxyRunning";
    pub const PROXY_DISABLED: &str = "ProxyDisabled";
    pub const PROXY_KIND_UNSUPPORTED: &str = "ProxyKindUnsupported";
    pub const READY: &str = "Ready";
}

impl Default for ServerProxy {
    fn default() -> Self {
        Self {
            kind: ProxyKind::default(),
            image: default_proxy_image(),
            http_port: default_http_port(),
            https_port: default_https_port(),
        }
    }
}

fn default_ssh_port() -> i32 {
    22
}

fn default_username() -> String {
    "root".to_string()
}

fn default_provider_key() -> String {
    "generic-ssh".to_string()
}

fn default_docker_socket_path() -> String {
    "/var/run/docker.sock".to_string()
}

fn default_proxy_image() -> String {
    DEFAULT_PROXY_IMAGE.to_string()
}

fn default_http_port() -> i32 {
    i32::from(PROXY_HTTP_PORT_DEFAULT)
}

fn default_https_port() -> i32 {
    i32::from(PROXY_HTTPS_PORT_DEFAULT)
}

/// What the controller observed about a server.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// Whether the last SSH connection succeeded.
    #[serde(default)]
    pub reachable: bool,
    /// SHA-256 fingerprint of the host key pinned on first contact (`SHA256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_key_fingerprint: Option<String>,
    /// Version of the Docker engine on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_version: Option<String>,
    /// Facts gathered from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<ServerFacts>,
    /// Lifecycle in effect: `active` or `inactive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<ServerLifecycle>,
    /// When the server became inactive, as the controller saw the change; cleared when it is
    /// active again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<Time>,
    /// When the server last answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_contact_at: Option<Time>,
    /// Why the server cannot be deleted yet; empty when deletion is safe.
    #[serde(default)]
    pub delete_blockers: Vec<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once SSH, Docker and the edge proxy work.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
