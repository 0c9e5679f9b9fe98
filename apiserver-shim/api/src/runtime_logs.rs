//! Runtime logs (`GET /resources/{resourceId}/runtime-logs`): lines a runtime wrote.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which output of the container a line came from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogStream {
    Stdout,
    Stderr,
}

/// The Runtime log line record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeLogLine {
    pub resource_id: String,
    /// The attempt that started the container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// The resource's service, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// `docker-container`.
    pub runtime_kind: String,
    /// Short id of the container.
    pub runtime_instance_id: String,
    /// Absent for a container with a TTY, whose output is one stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<LogStream>,
    /// When the container wrote the line (Docker's timestamp, UTC, nanoseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Position in this response or stream, from 1.
    pub sequence: u64,
    /// Pass as `since` to read the lines after this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// The line, secret values replaced by `****`.
    pub message: String,
    /// Whether a secret value was replaced in this line.
    pub masked: bool,
}

/// The answer of spec §4.7.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeLogs {
    pub resource_id: String,
    /// The attempt whose container was read; absent when there is no container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// Oldest first.
    pub logs: Vec<RuntimeLogLine>,
}
