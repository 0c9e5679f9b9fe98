//! Failures of remote access. Each maps to a stable condition reason; no message ever holds key
//! material (keys are only named by their public fingerprint).

use std::time::Duration;

/// Condition reasons a remote failure is reported with.
pub mod reason {
    pub const HOST_KEY_MISMATCH: &str = "HostKeyMismatch";
    pub const AUTHENTICATION_FAILED: &str = "AuthenticationFailed";
    pub const UNREACHABLE: &str = "Unreachable";
    pub const TIMEOUT: &str = "Timeout";
    pub const COMMAND_FAILED: &str = "CommandFailed";
    pub const DOCKER_ERROR: &str = "DockerError";
    pub const PROXY_ERROR: &str = "ProxyError";
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{operation} timed out after {}s", .after.as_secs_f32())]
    Timeout {
        operation: &'static str,
        after: Duration,
    },

    #[error("cannot connect to {address}: {source}")]
    Connect {
        address: String,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "host key mismatch: expected {expected}, got {got}; refusing to authenticate. If the \
         server's key really changed, set spec.expectedHostKeyFingerprint to {got}"
    )]
    HostKeyMismatch { expected: String, got: String },

    #[error("the server refused key {key_fingerprint} for user {user}")]
    AuthenticationRejected {
        user: String,
        key_fingerprint: String,
    },

    #[error("SSH {operation} failed: {source}")]
    Ssh {
        operation: &'static str,
        #[source]
        source: russh::Error,
    },

    #[error("`{command}` exited with status {status}: {stderr}")]
    CommandFailed {
        command: String,
        status: u32,
        stderr: String,
    },

    #[error("HTTP over the SSH tunnel failed: {source}")]
    Http {
        #[source]
        source: hyper::Error,
    },

    #[error("Docker {operation} failed: {source}")]
    Docker {
        operation: &'static str,
        #[source]
        source: bollard::errors::Error,
    },

    /// Preparing what goes to the server failed on this side (packing files, say).
    #[error("{operation} failed: {source}")]
    Io {
        operation: &'static str,
        #[source]
        source: std::io::Error,
    },

    #[error("edge proxy admin API: {0}")]
    ProxyAdmin(String),

    #[error("not retrying for {}s after: {message}", .retry_in.as_secs())]
    BackingOff {
        retry_in: Duration,
        reason: &'static str,
        message: String,
    },
}

impl RemoteError {
    /// The condition reason for this failure.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::HostKeyMismatch { .. } => reason::HOST_KEY_MISMATCH,
            Self::AuthenticationRejected { .. } => reason::AUTHENTICATION_FAILED,
            Self::Timeout { .. } => reason::TIMEOUT,
            Self::Connect { .. } | Self::Ssh { .. } | Self::Http { .. } => reason::UNREACHABLE,
            Self::CommandFailed { .. } => reason::COMMAND_FAILED,
            Self::Docker { .. } | Self::Io { .. } => reason::DOCKER_ERROR,
            Self::ProxyAdmin(_) => reason::PROXY_ERROR,
            Self::BackingOff { reason, .. } => reason,
        }
    }

    /// A message for a status condition: the same failure gives the same text, so repeated
    /// reconciles do not rewrite status (a backoff's countdown is left out).
    pub fn condition_message(&self) -> String {
        match self {
            Self::BackingOff { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// A stable label for metrics.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Timeout { .. } => "remote_timeout",
            Self::Connect { .. } => "remote_connect",
            Self::HostKeyMismatch { .. } => "remote_host_key_mismatch",
            Self::AuthenticationRejected { .. } => "remote_auth",
            Self::Ssh { .. } => "remote_ssh",
            Self::CommandFailed { .. } => "remote_command",
            Self::Http { .. } => "remote_http",
            Self::Docker { .. } => "remote_docker",
            Self::Io { .. } => "remote_io",
            Self::ProxyAdmin(_) => "remote_proxy_admin",
            Self::BackingOff { .. } => "remote_backing_off",
        }
    }

    /// Whether the failure is the way to the server's Docker or proxy, not the request: the
    /// connection, the tunnel, a timeout, the daemon not answering. Trying again later may work.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Timeout { .. }
            | Self::Connect { .. }
            | Self::Ssh { .. }
            | Self::Http { .. }
            | Self::BackingOff { .. } => true,
            // Docker's own answer (a status code) is about the request; anything else is the
            // transport failing underneath bollard.
            Self::Docker { source, .. } => !matches!(
                source,
                bollard::errors::Error::DockerResponseServerError { .. }
                    | bollard::errors::Error::JsonSerdeError { .. }
            ),
            Self::HostKeyMismatch { .. }
            | Self::AuthenticationRejected { .. }
            | Self::CommandFailed { .. }
            | Self::Io { .. }
            | Self::ProxyAdmin(_) => false,
        }
    }

    /// Whether the SSH connection itself is suspect after this failure (so it is dropped).
    pub fn breaks_connection(&self) -> bool {
        matches!(
            self,
            Self::Timeout { .. } | Self::Ssh { .. } | Self::Connect { .. }
        )
    }
}

/// Runs `future` with a deadline; `operation` names it in the error.
pub async fn within<T>(
    after: Duration,
    operation: &'static str,
    future: impl Future<Output = Result<T, RemoteError>>,
) -> Result<T, RemoteError> {
    tokio::time::timeout(after, future)
        .await
        .unwrap_or(Err(RemoteError::Timeout { operation, after }))
}
