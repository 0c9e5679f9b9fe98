//! Certificates of custom domains (spec §4.8).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::certificates::{ACME_PROVIDER, CertificateReason};

use crate::limits::OBJECT_NAME_MAX;
use crate::validate::{Checked, FieldError, bounded, non_empty};

/// The only challenge type Berth answers (through the edge proxy).
pub const HTTP_01: &str = "http-01";
/// Longest idempotency key or causation id.
pub const KEY_MAX: usize = 256;

/// `POST /certificates/issue-or-renew`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IssueOrRenew {
    /// Id of the domain binding the certificate is for.
    #[schemars(length(min = 1))]
    pub domain_binding_id: String,
    /// Id of the certificate; the binding's own (same id) when omitted.
    #[schemars(length(min = 1))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_id: Option<String>,
    /// `issue` (default), `renew` or `replace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<CertificateReason>,
    /// Certificate provider: `acme`.
    #[schemars(length(min = 1))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_key: Option<String>,
    /// ACME challenge type: `http-01`.
    #[schemars(length(min = 1))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge_type: Option<String>,
    /// Repeats with the same key name the same attempt.
    #[schemars(length(min = 1))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The caller's id of what caused this request.
    #[schemars(length(min = 1))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<String>,
}

impl IssueOrRenew {
    /// Every rule the request can be checked by before anything is read.
    pub fn validate(&self) -> Checked {
        check_object_name("domainBindingId", &self.domain_binding_id)?;
        if let Some(id) = &self.certificate_id {
            check_object_name("certificateId", id)?;
        }
        if let Some(provider) = &self.provider_key {
            non_empty("providerKey", provider)?;
            if provider != ACME_PROVIDER {
                return Err(FieldError::new(
                    "providerKey",
                    format!(
                        "providerKey must be {ACME_PROVIDER:?}: Berth issues certificates by ACME"
                    ),
                ));
            }
        }
        if let Some(challenge) = &self.challenge_type {
            non_empty("challengeType", challenge)?;
            if challenge != HTTP_01 {
                return Err(FieldError::new(
                    "challengeType",
                    format!("challengeType must be {HTTP_01:?}, the challenge Berth answers"),
                ));
            }
        }
        for (field, value) in [
            ("idempotencyKey", &self.idempotency_key),
            ("causationId", &self.causation_id),
        ] {
            if let Some(value) = value {
                bounded(field, value, KEY_MAX)?;
            }
        }
        Ok(())
    }
}

/// An object name (a DNS subdomain): 1..=253 lowercase letters, digits, dashes and dots,
/// starting and ending with a letter or digit.
pub fn check_object_name(field: &str, value: &str) -> Checked {
    non_empty(field, value)?;
    let valid = value.len() <= OBJECT_NAME_MAX
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if valid {
        return Ok(());
    }
    Err(FieldError::new(
        field,
        format!(
            "{field} must be an id: 1-{OBJECT_NAME_MAX} lowercase letters, digits, dashes or dots"
        ),
    ))
}

/// The Certificate issue result of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct IssueResult {
    pub certificate_id: String,
    pub attempt_id: String,
}

/// A certificate as the API shows it; never key material.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CertificateView {
    pub id: String,
    pub domain_binding_id: String,
    pub provider_key: String,
    pub secret_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_after: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renew_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub days_until_expiry: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256_fingerprint: Option<String>,
    pub failed_attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<String>,
    pub ready: bool,
    pub conditions: Vec<ConditionView>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct CertificateList {
    pub items: Vec<CertificateView>,
}

/// A domain binding as the API shows it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DomainBindingView {
    pub id: String,
    pub hostname: String,
    pub path_prefix: String,
    pub resource_id: String,
    pub tls_mode: String,
    pub http_policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_status: Option<String>,
    pub resolved_addresses: Vec<String>,
    pub ready: bool,
    pub conditions: Vec<ConditionView>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct DomainBindingList {
    pub items: Vec<DomainBindingView>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ConditionView {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(extra: serde_json::Value) -> IssueOrRenew {
        let mut body = serde_json::json!({"domainBindingId": "dom-1"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn object_names_are_dns_subdomains() {
        assert!(check_object_name("x", "shop.example").is_ok());
        for bad in ["", "Shop", "-a", "a.", &"a".repeat(254)] {
            assert_eq!(check_object_name("x", bad).unwrap_err().field, "x");
        }
    }

    #[test]
    fn an_issue_names_the_field_it_refuses() {
        assert!(issue(serde_json::json!({})).validate().is_ok());
        let all = serde_json::json!({"certificateId": "crt-1", "providerKey": "acme",
            "challengeType": "http-01", "idempotencyKey": "k", "causationId": "c"});
        assert!(issue(all).validate().is_ok());
        let long = "k".repeat(KEY_MAX + 1);
        for (extra, field) in [
            (
                serde_json::json!({"domainBindingId": "Dom"}),
                "domainBindingId",
            ),
            (serde_json::json!({"certificateId": ""}), "certificateId"),
            (
                serde_json::json!({"providerKey": "imported"}),
                "providerKey",
            ),
            (
                serde_json::json!({"challengeType": "dns-01"}),
                "challengeType",
            ),
            (
                serde_json::json!({"idempotencyKey": long}),
                "idempotencyKey",
            ),
            (serde_json::json!({"causationId": " "}), "causationId"),
        ] {
            let error = issue(extra.clone()).validate().unwrap_err();
            assert_eq!(error.field, field, "{extra}");
        }
    }
}
