//! Spec §4.10, terminal sessions.

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
    /// `server`.
    pub kind: String,
    /// The server to open a shell on.
    pub server_id: String,
}
