//! Why a source could not be fetched or exported, sorted by what fixes it.

use berth_remote::RemoteError;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The repository or the way to it refused us for a reason a person must fix: no such
    /// repository, ref or commit, a key it does not accept.
    #[error("{0}")]
    Refused(String),
    /// The git host's SSH key is not the pinned one.
    #[error("the SSH host key of {host} is {got}, not the pinned {expected}: refusing to fetch")]
    HostKeyMismatch {
        host: String,
        expected: String,
        got: String,
    },
    /// The host did not answer or the connection broke: a retry may succeed.
    #[error("{0}")]
    Unreachable(String),
    /// Reading or writing the controller's own copy failed.
    #[error("{0}")]
    Local(String),
}

impl SourceError {
    /// Whether a later attempt may succeed without a change of the source.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unreachable(_))
    }

    /// The error of an SSH connection to a git host.
    pub(crate) fn from_ssh(host: &str, error: RemoteError) -> Self {
        match error {
            RemoteError::HostKeyMismatch { expected, got } => Self::HostKeyMismatch {
                host: host.to_string(),
                expected,
                got,
            },
            RemoteError::AuthenticationRejected {
                user,
                key_fingerprint,
            } => Self::Refused(format!(
                "{host} refused the deploy key {key_fingerprint} for user {user}: add it to the \
                 repository's deploy keys"
            )),
            other if other.is_transient() => Self::Unreachable(format!("{host}: {other}")),
            other => Self::Refused(format!("{host}: {other}")),
        }
    }
}

/// A gix failure in `doing`, with its chain of causes in one line. A broken or timed-out
/// connection may mend by itself; anything else the repository said needs a person.
pub(crate) fn gix_error(doing: &str, error: impl std::error::Error) -> SourceError {
    let mut text = error.to_string();
    let mut transient = false;
    let mut cause = error.source();
    while let Some(inner) = cause {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            transient |= matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | TimedOut
                    | BrokenPipe
                    | UnexpectedEof
                    | HostUnreachable
                    | NetworkUnreachable
            );
        }
        let said = inner.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = inner.source();
    }
    let message = format!("{doing}: {text}");
    if transient {
        SourceError::Unreachable(message)
    } else {
        SourceError::Refused(message)
    }
}
