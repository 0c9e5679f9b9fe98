//! Password hashing (Argon2id). Hashes live in Secrets in the system namespace.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;

/// Hashes `password` into a PHC string.
pub fn hash(password: &str) -> String {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).expect("16 bytes is a valid salt");
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("hashing with default parameters cannot fail")
        .to_string()
}

/// Whether `password` matches the PHC string `hash`.
pub fn verify(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A strong random password for the first administrator (shown once).
pub fn generate() -> String {
    let mut bytes = [0u8; 18];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_accepts_only_the_right_password() {
        let password = generate();
        let hashed = hash(&password);
        assert!(!hashed.contains(&password));
        assert!(verify(&password, &hashed));
        assert!(!verify("wrong", &hashed));
        assert!(!verify(&password, "not a hash"));
    }
}
