//! The one mapping from what went wrong to the process's exit code (documented in `--help`
//! and the README; scripts match on them).

use std::fmt;

/// Stable exit codes (success is 0).
pub mod exit {
    pub const FAILURE: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const AUTH: u8 = 3;
    pub const NOT_FOUND: u8 = 4;
    pub const CONFLICT: u8 = 5;
}

/// The exit codes as `--help` and the README show them.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  failure (the API refused the request, a deployment failed, the server did not answer)
  2  usage (unknown command or option, missing argument)
  3  authentication or permission (not signed in, 401, 403)
  4  not found (404, or no such name)
  5  conflict (409)";

#[derive(Debug)]
pub enum CliError {
    /// The API answered with its error envelope.
    Api {
        status: u16,
        code: String,
        message: String,
    },
    /// No credentials, or they were refused before any request.
    Auth(String),
    /// A name the user gave matches nothing.
    NotFound(String),
    /// Wrong or missing arguments the parser could not catch.
    Usage(String),
    /// Everything else: transport errors, local files, a failed deployment.
    Failure(String),
}

pub type CliResult<T> = Result<T, CliError>;

impl CliError {
    pub fn failure(message: impl Into<String>) -> Self {
        Self::Failure(message.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Api { status, .. } => match status {
                401 | 403 => exit::AUTH,
                404 => exit::NOT_FOUND,
                409 => exit::CONFLICT,
                _ => exit::FAILURE,
            },
            Self::Auth(_) => exit::AUTH,
            Self::NotFound(_) => exit::NOT_FOUND,
            Self::Usage(_) => exit::USAGE,
            Self::Failure(_) => exit::FAILURE,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Api {
                status,
                code,
                message,
            } => {
                write!(f, "{code}: {message} (HTTP {status})")?;
                if *status == 401 {
                    write!(f, "\nhint: sign in again with `berth login`")?;
                }
                Ok(())
            }
            Self::Auth(message)
            | Self::NotFound(message)
            | Self::Usage(message)
            | Self::Failure(message) => f.write_str(message),
        }
    }
}

/// A request the API's own field check refuses is not sent: a usage error naming the field,
/// as the API's 422 would.
impl From<berth_api::validate::FieldError> for CliError {
    fn from(error: berth_api::validate::FieldError) -> Self {
        Self::Usage(error.message)
    }
}

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> Self {
        Self::Failure(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16) -> CliError {
        CliError::Api {
            status,
            code: "x".into(),
            message: "y".into(),
        }
    }

    #[test]
    fn statuses_map_to_the_documented_codes() {
        assert_eq!(api(401).exit_code(), 3);
        assert_eq!(api(403).exit_code(), 3);
        assert_eq!(api(404).exit_code(), 4);
        assert_eq!(api(409).exit_code(), 5);
        assert_eq!(api(422).exit_code(), 1);
        assert_eq!(api(503).exit_code(), 1);
        assert_eq!(CliError::Auth("a".into()).exit_code(), 3);
        assert_eq!(CliError::NotFound("a".into()).exit_code(), 4);
        assert_eq!(CliError::Usage("a".into()).exit_code(), 2);
    }

    #[test]
    fn an_api_error_shows_its_code_and_message() {
        let text = CliError::Api {
            status: 409,
            code: "conflict".into(),
            message: "slug taken".into(),
        }
        .to_string();
        assert_eq!(text, "conflict: slug taken (HTTP 409)");
    }
}
