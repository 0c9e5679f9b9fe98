//! Spec §4.10, terminal sessions and the control messages of their WebSocket.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateTerminalSession {
    /// What the terminal is opened on.
    pub scope: TerminalScope,
    /// Directory to start in, relative to the login user's home (1-512 characters; no `..`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative_directory: Option<String>,
    /// Terminal height in rows (10-120, default 24).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_rows: Option<i64>,
    /// Terminal width in columns (20-320, default 80).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_cols: Option<i64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TerminalScope {
    /// `server` (a login shell on the server), `resource` (a shell in the resource's serving
    /// container: `bash`, else `sh`) or `dependency` (Berth: the client of a managed
    /// database in its container, logged in: `psql`, or `redis-cli` with its password from
    /// the container, never through the API).
    pub kind: String,
    /// The server to open a shell on (scope `server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// The resource whose serving container to open a shell in (scope `resource`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// The managed database to open a client of (scope `dependency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_resource_id: Option<String>,
}

/// The Terminal session record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TerminalSessionRecord {
    /// Single-use id; connect within 60 seconds.
    pub session_id: String,
    /// `server`, `resource` or `dependency`.
    pub scope: String,
    pub server_id: String,
    /// The resource of a `resource` terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// The database of a `dependency` terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_resource_id: Option<String>,
    /// The deployment whose container a `resource` terminal runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// The container a `resource` or `dependency` terminal runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    pub transport: Transport,
    pub provider_key: String,
    /// Where the shell starts, relative to the login user's home (`~/…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    pub created_at: String,
    /// The WebSocket must be opened before this time.
    pub expires_at: String,
}

/// How to reach the terminal.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
pub struct Transport {
    /// `websocket`.
    pub kind: String,
    /// Absolute path of the WebSocket endpoint on this API's host.
    pub path: String,
}

/// A control message from the client (a text frame).
#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ClientMessage {
    /// Text typed into the terminal (binary frames carry raw bytes instead).
    Input { data: String },
    /// The terminal's new size.
    Resize { rows: i64, cols: i64 },
}

/// A control message from the server (a text frame).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServerMessage {
    /// The shell runs; output follows as binary frames.
    #[serde(rename_all = "camelCase")]
    Ready {
        session_id: String,
        server_id: String,
        rows: u32,
        cols: u32,
    },
    /// The shell ended; the socket closes next.
    #[serde(rename_all = "camelCase")]
    Exit {
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_status: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
    },
    /// A control message was refused, or the session is being closed.
    Error { message: String },
}

/// `schemaVersion` of `GET /terminal-sessions` (Appaloft's `terminal-sessions.list/v1`).
pub const LIST_SCHEMA: &str = "terminal-sessions.list/v1";

/// `schemaVersion` of `GET /terminal-sessions/{sessionId}` (Appaloft's
/// `terminal-sessions.show/v1`).
pub const SHOW_SCHEMA: &str = "terminal-sessions.show/v1";

/// Answer of `GET /terminal-sessions`: the caller's sessions, newest first.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    /// `terminal-sessions.list/v1`.
    pub schema_version: String,
    pub items: Vec<ListedSession>,
}

/// The filters of `GET /terminal-sessions` (Appaloft's `terminal-sessions.list` input), as
/// query parameters; each given one narrows the list.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default, Clone, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TerminalSessionFilters {
    /// Sessions of this scope only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<TerminalScopeKind>,
    /// Sessions on this server only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub server_id: Option<String>,
    /// Terminals in this resource's container only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub resource_id: Option<String>,
    /// Terminals in this deployment's container only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub deployment_id: Option<String>,
    /// Appaloft's sandbox terminals only (Berth opens none: the list is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub sandbox_id: Option<String>,
    /// At most this many sessions, the newest (1-200, default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
}

/// A terminal session's scope, as the list's `scope` filter names it.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TerminalScopeKind {
    /// A login shell on a server.
    Server,
    /// A shell in a resource's container.
    Resource,
    /// Berth: a managed database's client in its container.
    Dependency,
    /// Appaloft's sandbox terminals (Berth opens none).
    Sandbox,
}

impl TerminalScopeKind {
    pub const ALL: [Self; 4] = [
        Self::Server,
        Self::Resource,
        Self::Dependency,
        Self::Sandbox,
    ];

    /// As a session's `scope` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Resource => "resource",
            Self::Dependency => "dependency",
            Self::Sandbox => "sandbox",
        }
    }
}

/// Answer of `GET /terminal-sessions/{sessionId}`: one of the caller's sessions.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TerminalSessionDetail {
    /// `terminal-sessions.show/v1`.
    pub schema_version: String,
    pub item: ListedSession,
}

/// Body of `POST /terminal-sessions/{sessionId}/close` (Appaloft's `terminal-sessions.close`
/// input): empty, or repeating the path's session id.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloseTerminalSession {
    /// The path's session id, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Answer of `POST /terminal-sessions/{sessionId}/close`: the same for a session closed
/// just now and one closed before.
#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TerminalSessionClosed {
    pub session_id: String,
    /// `true`: the session's shell is no longer running.
    pub closed: bool,
    /// `closed`.
    pub status: TerminalClosedStatus,
}

/// The one status a close answers with.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TerminalClosedStatus {
    Closed,
}

/// The frames of the terminal WebSocket, for the OpenAPI document.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminalProtocol {
    /// JSON text frames a client may send; binary frames are raw input.
    pub client_text_frames: Option<ClientMessage>,
    /// JSON text frames the server sends; binary frames are terminal output.
    pub server_text_frames: Option<ServerMessage>,
}

/// A terminal session as `GET /terminal-sessions` lists it: Appaloft's terminal session
/// summary (the session's record as created, without its ticket, plus its status).
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ListedSession {
    pub session_id: String,
    /// `server`, `resource` or `dependency` (Berth).
    pub scope: String,
    pub server_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// The deployment whose container a `resource` terminal runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// Berth: the database of a `dependency` terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_resource_id: Option<String>,
    /// The session's WebSocket, without the create answer's single-use ticket: its creator
    /// opens it with their bearer token while the session waits for it.
    pub transport: Transport,
    /// The provider of the server the shell runs on.
    pub provider_key: String,
    /// Where the shell starts, relative to the login user's home (`~/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    pub status: TerminalSessionStatus,
    pub created_at: String,
}

/// Where a listed terminal session is (Appaloft's vocabulary).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TerminalSessionStatus {
    /// Waiting for its WebSocket (until `expiresAt` of its record), or connected to its shell.
    Active,
    /// Its shell has ended (or its client left, or it idled out) and its WebSocket is closing.
    Closing,
}
