//! Spec §2.2 "Route intent status": how the Resource's generated route serves it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Spec §2.2 "Route intent status".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteIntentStatus {
    pub schema_version: String,
    pub route_id: String,
    pub diagnostic_id: String,
    pub source: String,
    pub intent: RouteIntent,
    pub context: RouteContext,
    pub proxy: RouteProxy,
    pub domain_verification: String,
    pub tls: String,
    pub runtime_health: String,
    pub latest_observation: LatestObservation,
    pub blocking_reason: Option<String>,
    pub recommended_action: String,
    pub copy_safe_summary: CopySafeSummary,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteIntent {
    pub host: String,
    pub path_prefix: String,
    pub protocol: String,
    pub route_behavior: String,
    pub redirect_to: Option<String>,
    pub redirect_status: Option<i64>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteContext {
    pub resource_id: String,
    pub deployment_id: String,
    pub server_id: Option<String>,
    pub destination_id: Option<String>,
    pub runtime_target_kind: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteProxy {
    /// `required` (through the edge proxy) or `not-required` (direct port).
    pub intent: String,
    /// `ready` (applied and serving), `applied` (its runtime is not ready), `not-ready`,
    /// `unknown`, or `not-configured` (no proxy).
    pub applied: String,
    pub provider_key: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LatestObservation {
    pub source: String,
    pub observed_at: String,
    pub request_id: Option<String>,
    pub deployment_id: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CopySafeSummary {
    pub status: String,
    pub code: Option<String>,
    pub phase: Option<String>,
    pub message: String,
}
