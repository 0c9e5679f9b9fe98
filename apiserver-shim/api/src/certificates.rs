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
