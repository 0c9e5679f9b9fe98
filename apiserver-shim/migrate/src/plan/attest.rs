//! The shim's attestation of a plan: HMAC-SHA256 (RFC 2104) of `planDigest` under a key only
//! the shim holds, so a plan edited by a client, even with its digest recomputed, is refused.

use berth_api::migrations::MigrationPlan;
use sha2::{Digest, Sha256};

use super::digest::plan_digest;

const BLOCK: usize = 64;
/// Prefix of an attestation.
pub const ATTESTATION_PREFIX: &str = "hmac-sha256:";

/// HMAC-SHA256 of `message` under `key` (RFC 2104 with SHA-256's 64-byte block).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// `hmac-sha256:<hex>` of the plan digest.
pub fn attest(key: &[u8], plan_digest: &str) -> String {
    format!(
        "{ATTESTATION_PREFIX}{}",
        hex::encode(hmac_sha256(key, plan_digest.as_bytes()))
    )
}

/// Whether the plan carries the shim's attestation of the digest its content hashes to (not
/// merely of the `planDigest` it claims). Compared in constant time.
pub fn attestation_matches(key: &[u8], plan: &MigrationPlan) -> bool {
    let Some(claimed) = &plan.attestation else {
        return false;
    };
    let recomputed = plan_digest(plan);
    let expected = attest(key, &recomputed);
    constant_time_eq(expected.as_bytes(), claimed.as_bytes())
        & constant_time_eq(recomputed.as_bytes(), plan.plan_digest.as_bytes())
}

/// Equality whose time depends on the lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
