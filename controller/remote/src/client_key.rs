//! The private key a server is reached with, parsed from an SshCredential's Secret. Its `Debug`
//! shows only the public fingerprint, so the key cannot leak through a log line or an error.

use std::fmt;
use std::sync::Arc;

use russh::keys::{HashAlg, PrivateKey};

/// Why a Secret's value is not a usable private key. Messages never quote the value.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ClientKeyError {
    #[error("the value is not UTF-8 text")]
    NotText,
    #[error("the value is not an OpenSSH, PEM or PuTTY private key")]
    Unparseable,
    #[error("the private key is protected by a passphrase, which Berth does not support")]
    Encrypted,
}

/// A parsed private key, shared cheaply between connections.
#[derive(Clone)]
pub struct ClientKey {
    key: Arc<PrivateKey>,
    fingerprint: String,
    public_key: String,
}

impl ClientKey {
    /// Parses the bytes of a Secret key. Errors say what is wrong without echoing the input.
    pub fn parse(bytes: &[u8]) -> Result<Self, ClientKeyError> {
        let text = std::str::from_utf8(bytes).map_err(|_| ClientKeyError::NotText)?;
        let key = match russh::keys::decode_secret_key(text, None) {
            Ok(key) => key,
            Err(russh::keys::Error::KeyIsEncrypted) => return Err(ClientKeyError::Encrypted),
            Err(_) => return Err(ClientKeyError::Unparseable),
        };
        if key.is_encrypted() {
            return Err(ClientKeyError::Encrypted);
        }
        let public = key.public_key();
        let fingerprint = public.fingerprint(HashAlg::Sha256).to_string();
        let public_key = public
            .to_openssh()
            .map_err(|_| ClientKeyError::Unparseable)?;
        Ok(Self {
            key: Arc::new(key),
            fingerprint,
            public_key,
        })
    }

    /// SHA-256 fingerprint of the public key (`SHA256:…`), as `ssh-keygen -l` prints it.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The OpenSSH public key line, for `authorized_keys`.
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    pub(crate) fn private_key(&self) -> Arc<PrivateKey> {
        self.key.clone()
    }
}

impl fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientKey")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A throwaway key made for the unit tests with `ssh-keygen -t ed25519 -N ''`.
    const KEY: &str = include_str!("testdata/unit_test_key");

    #[test]
    fn derives_public_key_and_fingerprint() {
        let key = ClientKey::parse(KEY.as_bytes()).unwrap();
        assert!(key.public_key().starts_with("ssh-ed25519 AAAA"));
        // What `ssh-keygen -lf` printed for this key.
        assert_eq!(
            key.fingerprint(),
            "SHA256:sapBa+aAx0JFnRqP2StynmT6VW/FBMEM2WJVvqgo3YY"
        );
    }

    #[test]
    fn debug_output_hides_the_key() {
        let key = ClientKey::parse(KEY.as_bytes()).unwrap();
        let debug = format!("{key:?}");
        assert!(debug.contains(key.fingerprint()));
        assert!(!debug.contains("ED35I0h6Qtnz"));
    }

    #[test]
    fn garbage_is_refused_without_echoing_it() {
        let error = ClientKey::parse(b"not-a-key secret-text").unwrap_err();
        assert_eq!(error, ClientKeyError::Unparseable);
        assert!(!error.to_string().contains("secret-text"));
        assert_eq!(
            ClientKey::parse(&[0xff, 0xfe]).unwrap_err(),
            ClientKeyError::NotText
        );
    }
}
