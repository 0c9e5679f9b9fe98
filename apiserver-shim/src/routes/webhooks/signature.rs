//! Whether a webhook delivery comes from whoever holds the source binding's secret: GitHub and
//! Gitea sign the body with HMAC-SHA256, GitLab sends the secret itself as a token. Compared
//! in constant time.

use super::payload::Provider;

/// HMAC-SHA256 (RFC 2104): the one implementation, shared with plan attestation.
pub use berth_migrate::plan::hmac_sha256;

/// Equal bytes, in time that depends only on the length.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a delivery presents as proof: the signature or token header's value.
pub struct Proof<'a> {
    pub provider: Provider,
    pub value: &'a str,
}

/// Whether `proof` shows that the sender of `body` holds `secret`.
pub fn verifies(proof: &Proof<'_>, secret: &str, body: &[u8]) -> bool {
    match proof.provider {
        Provider::Gitlab => same(proof.value.as_bytes(), secret.as_bytes()),
        Provider::Github | Provider::Gitea => {
            let hex = proof.value.strip_prefix("sha256=").unwrap_or(proof.value);
            let expected = hex::encode(hmac_sha256(secret.as_bytes(), body));
            same(hex.to_ascii_lowercase().as_bytes(), expected.as_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_the_rfc_4231_vectors() {
        let mac = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(
            hex::encode(mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        let long_key = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex::encode(long_key),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn each_provider_proves_its_way() {
        let body = br#"{"ref":"refs/heads/main"}"#;
        let signature = format!("sha256={}", hex::encode(hmac_sha256(b"s3cret", body)));
        let github = Proof {
            provider: Provider::Github,
            value: &signature,
        };
        assert!(verifies(&github, "s3cret", body));
        assert!(!verifies(&github, "other", body));
        assert!(!verifies(&github, "s3cret", b"{}"));
        let bare = signature.trim_start_matches("sha256=");
        assert!(verifies(
            &Proof {
                provider: Provider::Gitea,
                value: bare
            },
            "s3cret",
            body
        ));
        let token = Proof {
            provider: Provider::Gitlab,
            value: "s3cret",
        };
        assert!(verifies(&token, "s3cret", body));
        assert!(!verifies(
            &Proof {
                provider: Provider::Gitlab,
                value: "s3cre"
            },
            "s3cret",
            body
        ));
    }
}
