//! Spec §2.2 "Route intent status": how the Resource's generated route serves it.

use super::{
    CopySafeSummary, LatestObservation, RouteContext, RouteIntent, RouteIntentStatus, RouteProxy,
};
use super::{Inputs, ROUTE_INTENT_SCHEMA_VERSION, RuntimeBlock};
use crate::resource::AppliedAccessRoute;
use crate::server::ProxyKind;
use kube::ResourceExt;

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
        schema_version: ROUTE_INTENT_SCHEMA_VERSION.into(),
        diagnostic_id: format!("route-{route_id}"),
        route_id,
        source: "generated-default-access".into(),
        intent: RouteIntent {
            host: route.hostname.clone(),
            path_prefix: route.path_prefix.clone(),
            protocol: "http".into(),
            route_behavior: "serve".into(),
            redirect_to: None,
            redirect_status: None,
        },
        context: RouteContext {
            resource_id: resource.name_any(),
            deployment_id: route.deployment_id.clone(),
            server_id: resource.spec.server_id.clone(),
            destination_id: resource.spec.destination_id.clone(),
            runtime_target_kind: "single-server".into(),
        },
        proxy: RouteProxy {
            intent: if direct {
                "not-required".into()
            } else {
                "required".into()
            },
            applied: route_applied(direct, status, blocking).into(),
            provider_key: route.provider_key.clone(),
        },
        domain_verification: "not-applicable".into(),
        tls: "not-applicable".into(),
        runtime_health: runtime.health.clone(),
        latest_observation: LatestObservation {
            source: "resource-access-summary".into(),
            observed_at: route.updated_at.clone(),
            request_id: None,
            deployment_id: route.deployment_id.clone(),
        },
        blocking_reason: blocking.map(String::from),
        recommended_action: if blocking.is_some() {
            "check-health".into()
        } else {
            "none".into()
        },
        copy_safe_summary: CopySafeSummary {
            status: if status == "ready" {
                "available".into()
            } else {
                status.into()
            },
            code: blocking.map(String::from),
            phase: blocking.map(|_| "edge-request-routing".into()),
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
