//! Bearer secrets (generated here, shown once, stored only as a SHA-256 digest) and the ids of
//! new objects.

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

tokio::task_local! {
    /// Set while a migration step runs (`with_id_seed`): the ids it creates are derived from
    /// the seed instead of drawn at random, so a step re-run after a lost receipt names the
    /// same objects instead of creating them twice.
    static ID_SEED: String;
}

/// Runs `work` with ids derived from `seed` (see [`new_id`]).
pub async fn with_id_seed<F: std::future::Future>(seed: String, work: F) -> F::Output {
    ID_SEED.scope(seed, work).await
}

/// The id [`new_id`] returns for `prefix` under `seed`.
pub fn seeded_id(seed: &str, prefix: &str) -> String {
    let digest = Sha256::digest(format!("{seed}/{prefix}").as_bytes());
    format!("{prefix}-{}", id_tail(&digest[..12]))
}

/// A lowercase id for object names, e.g. `prj-k3x9…`: random, or derived from the seed of
/// the migration step being run.
pub fn new_id(prefix: &str) -> String {
    if let Ok(id) = ID_SEED.try_with(|seed| seeded_id(seed, prefix)) {
        return id;
    }
    let mut bytes = [0u8; 12];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}-{}", id_tail(&bytes))
}

fn id_tail(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
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
