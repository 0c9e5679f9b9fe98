//! Certificate: TLS issuance or renewal for a domain binding (spec §4.8
//! `/certificates/issue-or-renew`). The key pair lives in a `kubernetes.io/tls` Secret.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::OBJECT_NAME_MAX;

pub use berth_vocabulary::certificates::{ACME_PROVIDER, CertificateReason};

/// A TLS certificate for a domain binding; the key pair lives in a `kubernetes.io/tls` Secret.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Certificate",
    namespaced,
    shortname = "bcert",
    category = "berth",
    doc = "A TLS certificate for a domain binding; its key pair lives in a kubernetes.io/tls Secret.",
    status = "CertificateStatus",
    printcolumn = r#"{"name":"Domain Binding","type":"string","jsonPath":".spec.domainBindingId"}"#,
    printcolumn = r#"{"name":"Not After","type":"string","jsonPath":".status.notAfter"}"#,
    printcolumn = r#"{"name":"Days Left","type":"integer","jsonPath":".status.daysUntilExpiry"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CertificateSpec {
    /// Id (object name) of the DomainBinding the certificate is for.
    #[schemars(length(min = 1))]
    pub domain_binding_id: String,
    /// `issue` (default), `renew` or `replace`.
    #[serde(default)]
    pub reason: CertificateReason,
    /// Certificate provider, e.g. `acme`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub provider_key: Option<String>,
    /// ACME challenge type, e.g. `http-01`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub challenge_type: Option<String>,
    /// Name of the `kubernetes.io/tls` Secret holding the key pair; derived when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = OBJECT_NAME_MAX))]
    pub secret_name: Option<String>,
}

/// `providerKey` of a certificate the user brings: the key pair already in `secretName` is
/// used as it is, never renewed by Berth.
pub const IMPORTED_PROVIDER: &str = "imported";
/// Annotation the REST shim sets to ask for a new attempt (`issue-or-renew`): the attempt id.
pub const REQUESTED_ATTEMPT_ANNOTATION: &str = "berth.dev/requested-attempt";
/// Annotation holding the idempotency key of the latest `issue-or-renew` request.
pub const IDEMPOTENCY_KEY_ANNOTATION: &str = "berth.dev/idempotency-key";

/// Condition types of a Certificate besides `Ready`.
pub mod condition_type {
    /// `True` while a valid certificate is in the Secret.
    pub const ISSUED: &str = "Issued";
    /// `True` while a renewal (or a first issuance) is under way.
    pub const RENEWING: &str = "Renewing";
    /// `True` after the latest attempt failed; the message carries the reason (the CA's error).
    pub const FAILED: &str = "Failed";
}

/// Reasons of a Certificate's conditions.
pub mod reason {
    pub const ISSUED: &str = "Issued";
    pub const IMPORTED: &str = "Imported";
    pub const EXPIRING_SOON: &str = "ExpiringSoon";
    pub const EXPIRED: &str = "Expired";
    pub const ORDERING: &str = "Ordering";
    pub const RENEWAL_DUE: &str = "RenewalDue";
    pub const PREFLIGHT_FAILED: &str = "PreflightFailed";
    pub const ORDER_FAILED: &str = "OrderFailed";
    pub const INVALID_CERTIFICATE: &str = "InvalidCertificate";
    pub const NOT_FAILED: &str = "NotFailed";
    pub const IDLE: &str = "Idle";
}

/// What happened to a certificate request.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateStatus {
    /// Id of the latest issuance attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// Host name the certificate is for (from the domain binding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Name of the `kubernetes.io/tls` Secret holding the key pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// SHA-256 of the leaf certificate (DER, hex), to compare with what a server presents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_fingerprint: Option<String>,
    /// When the current certificate was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<Time>,
    /// When the current certificate expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Time>,
    /// Whole days until `notAfter` (negative once expired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days_until_expiry: Option<i64>,
    /// When Berth renews it: two thirds into its lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_at: Option<Time>,
    /// Failed attempts since the last success; retries back off with this count.
    #[serde(default)]
    pub failed_attempts: u32,
    /// When a failed attempt is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<Time>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once a valid certificate is in the Secret.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
