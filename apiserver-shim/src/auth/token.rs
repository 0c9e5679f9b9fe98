//! Bearer secrets: generated here, shown once, stored only as a SHA-256 digest.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Prefix of session tokens (interactive logins).
pub const SESSION_PREFIX: &str = "bst_";
/// Prefix of deploy tokens (automation).
pub const DEPLOY_TOKEN_PREFIX: &str = "bdt_";

/// A new random secret with a recognisable prefix (secret scanners key on it).
pub fn generate(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// `sha256:<hex>` of a secret: what custom resources store instead of the secret.
pub fn digest(secret: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(secret.as_bytes())))
}

/// The last four characters, shown on reads so people can tell tokens apart.
pub fn suffix(secret: &str) -> String {
    secret
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

/// A random lowercase id for object names, e.g. `prj-k3x9…`.
pub fn new_id(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 12];
    rand::rng().fill_bytes(&mut bytes);
    let tail: String = bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    format!("{prefix}-{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_stable_and_hides_the_secret() {
        let secret = generate(DEPLOY_TOKEN_PREFIX);
        assert!(secret.starts_with("bdt_") && secret.len() > 40);
        assert_eq!(digest(&secret), digest(&secret));
        assert!(!digest(&secret).contains(&secret[4..]));
        assert_eq!(digest(&secret).len(), "sha256:".len() + 64);
        assert_ne!(generate(SESSION_PREFIX), generate(SESSION_PREFIX));
        assert_eq!(suffix("abcdef"), "cdef");
    }

    #[test]
    fn ids_are_prefixed_dns_labels() {
        let id = new_id("prj");
        assert!(id.starts_with("prj-") && id.len() == 16);
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }
}
