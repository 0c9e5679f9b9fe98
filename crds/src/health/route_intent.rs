//! Spec §2.2 "Route intent status": how the Resource's generated route serves it.

use super::{Inputs, ROUTE_INTENT_SCHEMA_VERSION, RuntimeBlock};
use crate::resource::AppliedAccessRoute;
use crate::server::ProxyKind;
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;

/// Spec §2.2 "Route intent status".
#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteIntentStatus {
    pub schema_version: &'static str,
    pub route_id: String,
    pub diagnostic_id: String,
    pub source: &'static str,
    pub intent: RouteIntent,
    pub context: RouteContext,
    pub proxy: RouteProxy,
    pub domain_verification: &'static str,
    pub tls: &'static str,
    pub runtime_health: String,
    pub latest_observation: LatestObservation,
    pub blocking_reason: Option<&'static str>,
    pub recommended_action: &'static str,
    pub copy_safe_summary: CopySafeSummary,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteIntent {
    pub host: String,
    pub path_prefix: String,
    pub protocol: &'static str,
    pub route_behavior: &'static str,
    pub redirect_to: Option<String>,
    pub redirect_status: Option<i64>,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteContext {
    pub resource_id: String,
    pub deployment_id: String,
    pub server_id: Option<String>,
    pub destination_id: Option<String>,
    pub runtime_target_kind: &'static str,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RouteProxy {
    /// `required` (through the edge proxy) or `not-required` (direct port).
    pub intent: &'static str,
    /// `ready` (applied and serving), `applied` (its runtime is not ready), `not-ready`,
    /// `unknown`, or `not-configured` (no proxy).
    pub applied: &'static str,
    pub provider_key: Option<String>,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LatestObservation {
    pub source: &'static str,
    pub observed_at: String,
    pub request_id: Option<String>,
    pub deployment_id: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct CopySafeSummary {
    pub status: &'static str,
    pub code: Option<&'static str>,
    pub phase: Option<&'static str>,
    pub message: String,
}

pub(super) fn route_intent(
    inputs: &Inputs,
    route: &AppliedAccessRoute,
    status: &'static str,
    blocking: Option<&'static str>,
    runtime: &RuntimeBlock,
) -> RouteIntentStatus {
    let resource = inputs.resource;
    let route_id = format!("{}-generated", resource.name_any());
    let direct = route.proxy_kind == ProxyKind::None;
    let message = match blocking {
        None => format!("{} serves the resource", route.url),
        Some("runtime_not_ready") => format!("{}: the container is {}", route.url, runtime.health),
        Some("runtime_stopped") => format!("{}: the runtime is stopped on request", route.url),
        Some(_) => format!("{}: the edge proxy does not serve the route", route.url),
    };
    RouteIntentStatus {
        schema_version: ROUTE_INTENT_SCHEMA_VERSION,
        diagnostic_id: format!("route-{route_id}"),
        route_id,
        source: "generated-default-access",
        intent: RouteIntent {
            host: route.hostname.clone(),
            path_prefix: route.path_prefix.clone(),
            protocol: "http",
            route_behavior: "serve",
            redirect_to: None,
            redirect_status: None,
        },
        context: RouteContext {
            resource_id: resource.name_any(),
            deployment_id: route.deployment_id.clone(),
            server_id: resource.spec.server_id.clone(),
            destination_id: resource.spec.destination_id.clone(),
            runtime_target_kind: "single-server",
        },
        proxy: RouteProxy {
            intent: if direct { "not-required" } else { "required" },
            applied: route_applied(direct, status, blocking),
            provider_key: route.provider_key.clone(),
        },
        domain_verification: "not-applicable",
        tls: "not-applicable",
        runtime_health: runtime.health.clone(),
        latest_observation: LatestObservation {
            source: "resource-access-summary",
            observed_at: route.updated_at.clone(),
            request_id: None,
            deployment_id: route.deployment_id.clone(),
        },
        blocking_reason: blocking,
        recommended_action: if blocking.is_some() {
            "check-health"
        } else {
            "none"
        },
        copy_safe_summary: CopySafeSummary {
            status: if status == "ready" {
                "available"
            } else {
                status
            },
            code: blocking,
            phase: blocking.map(|_| "edge-request-routing"),
            message,
        },
    }
}

/// How far the edge proxy has applied a route in state `status` (blocked by `blocking`).
fn route_applied(direct: bool, status: &str, blocking: Option<&str>) -> &'static str {
    match (direct, status, blocking) {
        (true, _, _) => "not-configured",
        (false, "ready", _) => "ready",
        (false, _, Some("runtime_not_ready" | "runtime_stopped")) => "applied",
        (false, "not-ready", _) => "not-ready",
        _ => "unknown",
    }
}
