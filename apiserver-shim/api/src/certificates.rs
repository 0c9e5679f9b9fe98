//! Certificates of custom domains (spec §4.8).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::certificates::CertificateReason;

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
