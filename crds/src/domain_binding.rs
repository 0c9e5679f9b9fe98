//! DomainBinding: a durable host name (and path prefix) routed to a resource.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::limits::OBJECT_NAME_MAX;

/// A host name bound to a resource; TLS comes from a Certificate.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "DomainBinding",
    namespaced,
    shortname = "bdom",
    category = "berth",
    doc = "A durable host name and path prefix routed to a resource, with its TLS mode.",
    status = "DomainBindingStatus",
    printcolumn = r#"{"name":"Hostname","type":"string","jsonPath":".spec.hostname"}"#,
    printcolumn = r#"{"name":"Resource","type":"string","jsonPath":".spec.resourceId"}"#,
    printcolumn = r#"{"name":"TLS","type":"string","jsonPath":".spec.tlsMode"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DomainBindingSpec {
    /// Id (object name) of the Resource served.
    #[schemars(length(min = 1))]
    pub resource_id: String,
    /// Host name, lowercase, e.g. `shop.example.com` or `*.example.com`.
    #[schemars(
        length(min = 1, max = OBJECT_NAME_MAX),
        regex(
            pattern = r"^(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
        )
    )]
    pub hostname: String,
    /// Path prefix served under the host name.
    #[serde(default = "default_path_prefix")]
    #[schemars(length(min = 1))]
    pub path_prefix: String,
    /// TLS mode, e.g. `auto` (certificate issued by ACME) or `disabled`.
    #[serde(default = "default_tls_mode")]
    #[schemars(length(min = 1))]
    pub tls_mode: String,
    /// Id (object name) of the Server whose edge proxy serves the route; the resource's when
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub server_id: Option<String>,
    /// Plain HTTP once TLS is active: `redirect` (default; answered with 308 to HTTPS) or
    /// `serve` (the application answers on both).
    #[serde(default)]
    pub http_policy: HttpPolicy,
}

pub use berth_vocabulary::domain_bindings::HttpPolicy;

/// `tlsMode` under which Berth obtains the certificate by ACME.
pub const TLS_MODE_AUTO: &str = "auto";
/// `tlsMode` without TLS: plain HTTP only.
pub const TLS_MODE_DISABLED: &str = "disabled";

/// Condition types of a DomainBinding besides `Ready`.
pub mod condition_type {
    /// The host name resolves to the server's address.
    pub const VERIFIED: &str = "Verified";
    /// The edge proxy of the server routes the host name.
    pub const ROUTE_APPLIED: &str = "RouteApplied";
    /// A certificate for the host name is loaded and served (checked by a TLS handshake).
    pub const CERTIFICATE_SERVED: &str = "CertificateServed";
}

/// Reasons of a DomainBinding's conditions.
pub mod reason {
    pub const RESOLVES_TO_SERVER: &str = "ResolvesToServer";
    pub const RESOLVES_ELSEWHERE: &str = "ResolvesElsewhere";
    pub const DOES_NOT_RESOLVE: &str = "DoesNotResolve";
    pub const APPLIED: &str = "Applied";
    pub const NOT_APPLIED: &str = "NotApplied";
    pub const SERVED: &str = "Served";
    pub const WAITING_FOR_CERTIFICATE: &str = "WaitingForCertificate";
    pub const SERVED_CERTIFICATE_DIFFERS: &str = "ServedCertificateDiffers";
    pub const TLS_DISABLED: &str = "TlsDisabled";
    pub const SERVER_NOT_READY: &str = "ServerNotReady";
}

fn default_path_prefix() -> String {
    "/".to_string()
}

fn default_tls_mode() -> String {
    "auto".to_string()
}

/// What the controller observed about a domain binding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainBindingStatus {
    /// Id (object name) of the Certificate serving TLS for this binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_id: Option<String>,
    /// Status of the route on the edge proxy, e.g. `ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_status: Option<String>,
    /// Id (object name) of the Server whose edge proxy serves the route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// Where the host name is served, `https://…` once TLS is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Addresses the host name resolved to at the last check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved_addresses: Vec<String>,
    /// SHA-256 (hex) of the leaf certificate the edge proxy presented for the host name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_certificate_sha256: Option<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the route is served.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
