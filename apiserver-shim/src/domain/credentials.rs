//! SSH credentials as the routes reach them: the organization's scoped lookup and the check
//! of a submitted private key.

use std::sync::Arc;

use berth_crds::ssh_credential::SshCredential;
use berth_remote::{ClientKey, ClientKeyError};

use crate::domain::objects::find_in;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Largest private key accepted (an RSA-8192 PEM key is under 7 KiB).
pub const MAX_KEY_BYTES: usize = 16 * 1024;

/// A credential of the caller's organization, or 404 (also while it is being deleted).
pub fn lookup(state: &AppState, namespace: &str, id: &str) -> ApiResult<Arc<SshCredential>> {
    let credential = find_in(
        &state.caches.ssh_credentials,
        namespace,
        id,
        "SSH credential",
    )?;
    if credential.metadata.deletion_timestamp.is_some() {
        return Err(ApiError::not_found("SSH credential", id));
    }
    Ok(credential)
}

/// Parses a submitted key. The message names the problem, never the input.
pub fn parse_key(field: &str, text: &str) -> ApiResult<ClientKey> {
    if text.len() > MAX_KEY_BYTES {
        return Err(ApiError::validation(
            field,
            format!("{field} must be at most {MAX_KEY_BYTES} bytes"),
        ));
    }
    ClientKey::parse(text.trim().as_bytes()).map_err(|error| {
        let problem = match error {
            ClientKeyError::Encrypted => "is protected by a passphrase; submit the key without one",
            ClientKeyError::NotText | ClientKeyError::Unparseable => {
                "is not an OpenSSH or PEM private key"
            }
        };
        ApiError::validation(field, format!("{field} {problem}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_key_is_refused_without_echoing_it() {
        let error = parse_key(
            "privateKey",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n",
        )
        .err()
        .unwrap();
        assert_eq!(error.status, 422);
        assert_eq!(error.body.details["field"], "privateKey");
        assert!(!error.body.message.contains("c2VjcmV0"));
    }
}
