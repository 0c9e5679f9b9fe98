//! Host key verification: the russh client handler that refuses a server whose key does not
//! match the pinned fingerprint, during key exchange and so before any authentication.

use std::sync::{Arc, Mutex};

use russh::client;
use russh::keys::{HashAlg, PublicKeyOrCertificate};

/// SHA-256 fingerprint of a host key (`SHA256:…`), the form `ssh-keygen -l` prints.
pub fn fingerprint(key: &PublicKeyOrCertificate) -> String {
    match key {
        PublicKeyOrCertificate::PublicKey { key, .. } => key.fingerprint(HashAlg::Sha256),
        PublicKeyOrCertificate::Certificate(certificate) => {
            certificate.public_key().fingerprint(HashAlg::Sha256)
        }
    }
    .to_string()
}

/// Whether a host key with `seen` fingerprint may be used when `pinned` is expected.
/// Nothing pinned means first contact: any key is accepted and then pinned by the caller.
pub fn accepts(pinned: Option<&str>, seen: &str) -> bool {
    pinned.is_none_or(|pinned| pinned == seen)
}

/// The client handler of every Berth SSH connection. It records the key the server showed, so a
/// refusal can say which key was seen.
pub struct HostKeyCheck {
    pinned: Option<String>,
    seen: Arc<Mutex<Option<String>>>,
}

impl HostKeyCheck {
    /// A handler that accepts only `pinned` (or anything, when `None`), and the slot where it
    /// records the fingerprint it saw.
    pub fn new(pinned: Option<String>) -> (Self, Arc<Mutex<Option<String>>>) {
        let seen = Arc::new(Mutex::new(None));
        (
            Self {
                pinned,
                seen: seen.clone(),
            },
            seen,
        )
    }
}

impl client::Handler for HostKeyCheck {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let seen = fingerprint(key);
        let accepted = accepts(self.pinned.as_deref(), &seen);
        if let Ok(mut slot) = self.seen.lock() {
            *slot = Some(seen);
        }
        Ok(accepted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_contact_accepts_any_key() {
        assert!(accepts(None, "SHA256:abc"));
    }

    #[test]
    fn pinned_key_must_match_exactly() {
        assert!(accepts(Some("SHA256:abc"), "SHA256:abc"));
        assert!(!accepts(Some("SHA256:abc"), "SHA256:abd"));
        assert!(!accepts(Some("SHA256:abc"), "sha256:abc"));
    }
}
