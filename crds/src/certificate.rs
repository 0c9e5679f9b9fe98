//! Certificate: TLS issuance or renewal for a domain binding (spec §4.8
//! `/certificates/issue-or-renew`). The key pair lives in a `kubernetes.io/tls` Secret.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::OBJECT_NAME_MAX;

/// Why a certificate is requested.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CertificateReason {
    #[default]
    Issue,
    Renew,
    Replace,
}

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

/// What happened to a certificate request.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateStatus {
    /// Id of the latest issuance attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// When the current certificate was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<Time>,
    /// When the current certificate expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<Time>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once a valid certificate is in the Secret.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
