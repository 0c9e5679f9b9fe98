//! Digests: SHA-256 of the RFC 8785 (JCS) form. Keys are sorted here by UTF-16 code units, as
//! JCS says, whatever order `serde_json::Map` keeps; strings are escaped as serde_json does,
//! which is JCS's escaping; plans hold only strings, integers and booleans.

use berth_api::migrations::{MigrationBundle, MigrationPlan};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The JCS text of `value`: no whitespace, object keys sorted.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        // Integers, booleans and null print as JCS prints them.
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(text: &str, out: &mut String) {
    // serde_json escapes `"`, `\` and control characters (`\n`, `\u001f`), nothing else.
    out.push_str(&Value::String(text.to_string()).to_string());
}

/// `sha256:<hex>` of the JCS form of `value`.
pub fn sha256_of<T: Serialize>(value: &T) -> String {
    let value = serde_json::to_value(value).expect("plan types serialize to JSON");
    let digest = Sha256::digest(canonical_json(&value).as_bytes());
    format!("sha256:{}", hex::encode(digest))
}

/// Digest of a canonical bundle.
pub fn bundle_digest(bundle: &MigrationBundle) -> String {
    sha256_of(bundle)
}

/// Recomputes `planDigest` from the six fields it covers (not `variableReport`, not
/// `attestation`, not the claimed digest itself).
pub fn plan_digest(plan: &MigrationPlan) -> String {
    sha256_of(&json!({
        "protocol": plan.protocol,
        "state": plan.state,
        "bundleDigest": plan.bundle_digest,
        "steps": plan.steps,
        "blockers": plan.blockers,
        "warnings": plan.warnings,
    }))
}

/// `sha256:` and 64 lower-case hex digits.
pub fn is_sha256(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(is_lower_hex_64)
}

pub(crate) fn is_lower_hex_64(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
