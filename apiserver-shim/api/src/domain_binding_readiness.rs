//! `POST /domain-bindings/dns-readiness/inspect`: the answer, Appaloft's DNS readiness with
//! Berth's `resolution`, `requiredRecords` and `ready`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Appaloft's DNS readiness, with Berth's `resolution`, `requiredRecords` and `ready`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DnsReadiness {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_binding_id: Option<String>,
    pub resource_id: String,
    pub domain_name: String,
    pub path_prefix: String,
    pub provider_discovery: ProviderDiscovery,
    pub selected_connector: SelectedConnector,
    pub zone_match: ZoneMatch,
    pub conflict: Conflict,
    pub plan: Plan,
    pub actions: Actions,
    pub resolution: Resolution,
    /// The records that make the name lead to the server (created by hand).
    pub required_records: Vec<RequiredRecord>,
    /// The name resolves to the server and no other binding holds it.
    pub ready: bool,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ProviderDiscovery {
    /// `unknown`: Berth does not detect DNS providers.
    pub status: String,
    pub hostname: String,
    pub base_domain: String,
    pub nameservers: Vec<String>,
    pub provider_id: String,
    pub provider_title: String,
    pub confidence: String,
    pub message: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct SelectedConnector {
    /// `none`.
    pub source: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct ZoneMatch {
    /// `no-dns-connections`.
    pub status: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    /// `available` or `conflict`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicting_domain_binding_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicting_resource_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicting_project_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// `not-requested`: there is no connector to plan with.
    pub status: String,
    pub message: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Actions {
    pub can_apply_dns: bool,
    pub can_connect_provider: bool,
    pub can_show_manual_dns: bool,
    pub reason: String,
}

/// Where the name resolves now, against the server's addresses.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// `points-at-server`, `points-elsewhere`, `not-resolving`, `lookup-failed` or `no-server`.
    pub status: String,
    pub addresses: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    pub server_addresses: Vec<String>,
    pub message: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RequiredRecord {
    pub name: String,
    /// `A`.
    #[serde(rename = "type")]
    pub record_type: String,
    pub value: String,
    /// `domain-routing`.
    pub purpose: String,
}

/// Appaloft's input: a binding, or a resource and a host name. Its DNS-connector fields are
/// refused by name (Berth writes no DNS records).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InspectDnsReadiness {
    #[serde(default)]
    pub domain_binding_id: Option<String>,
    #[serde(default)]
    pub resource_id: Option<String>,
    #[serde(default)]
    pub domain_name: Option<String>,
    #[serde(default)]
    pub path_prefix: Option<String>,
    #[serde(default)]
    pub connector_key: Option<String>,
    #[serde(default)]
    pub capability_key: Option<String>,
    #[serde(default)]
    pub records: Option<serde_json::Value>,
    #[serde(default)]
    pub ttl: Option<u32>,
    #[serde(default)]
    pub proxied: Option<bool>,
}
