//! Domain binding changes: whether a binding can be deleted, and what stands in the way.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use berth_vocabulary::domain_bindings::HttpPolicy;

/// Appaloft's domain-binding delete safety.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteSafety {
    pub domain_binding_id: String,
    pub safe_to_delete: bool,
    pub blockers: Vec<DeleteBlocker>,
    pub warnings: Vec<DeleteBlocker>,
    pub preserves_generated_access: bool,
    pub preserves_deployment_snapshots: bool,
    pub preserves_server_applied_route_audit: bool,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBlocker {
    /// `active-certificate` or `certificate-history`.
    pub kind: String,
    /// `blocking` or `warning`.
    pub severity: String,
    pub message: String,
    pub related_entity_type: String,
    pub related_entity_id: String,
}

/// Appaloft's create-domain-binding input. Fields Berth cannot honour are refused by name.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateDomainBinding {
    pub project_id: String,
    pub environment_id: String,
    pub resource_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    pub domain_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// `preserve` only: the path reaches the app as requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_handling: Option<String>,
    /// `caddy` (Berth's edge proxy); omitted means the server's proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_kind: Option<String>,
    /// `auto` (an ACME certificate) or `disabled` (plain HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_service_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_status: Option<u16>,
    /// `auto` or `disabled`, as `tlsMode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_policy: Option<String>,
    /// Plain HTTP once TLS is active: `redirect` (default) or `serve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_policy: Option<HttpPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct BindingConfirmation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_binding_id: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteDomainBinding {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<BindingConfirmation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}
