//! Builds the record from what Berth already knows: the Resource's status, its latest
//! Deployment and its server.

use super::route_intent::route_intent;
use super::{
    HealthPolicy, LatestDeployment, ProxyBlock, PublicAccess, ResourceHealth, RuntimeBlock,
    SCHEMA_VERSION, runtime_control_block, timestamp,
};
use crate::deployment::{Deployment, DeploymentState};
use crate::resource::{
    AppliedAccessRoute, HealthCheck, ProxyRouteStatus, Resource, RuntimeHealth, RuntimeLifecycle,
    RuntimeObservation,
};
use crate::server::{ProxyKind, Server};
use kube::ResourceExt;

/// What the record is built from.
pub struct Inputs<'a> {
    pub resource: &'a Resource,
    pub latest: Option<&'a Deployment>,
    pub server: Option<&'a Server>,
    pub now: String,
}

/// The health record from the cached state; probes may add checks and correct `runtime` later.
pub fn build(inputs: &Inputs) -> ResourceHealth {
    let resource = inputs.resource;
    let status = resource.status.clone().unwrap_or_default();
    let runtime = runtime_block(status.runtime.as_ref());
    let route = status
        .access_summary
        .as_ref()
        .and_then(|a| a.latest_generated_access_route.clone());
    let public_access = public_access(inputs, route.as_ref(), status.proxy_route_status, &runtime);
    let mut health = ResourceHealth {
        schema_version: SCHEMA_VERSION.into(),
        resource_id: resource.name_any(),
        generated_at: inputs.now.clone(),
        observed_at: runtime.observed_at.clone(),
        overall: "unknown".into(),
        partial: false,
        latest_deployment: inputs.latest.map(latest_deployment),
        runtime,
        latest_runtime_control: status
            .runtime_control
            .as_ref()
            .map(|c| runtime_control_block(&c.latest)),
        health_policy: health_policy(resource),
        public_access,
        proxy: proxy_block(inputs.server, &status),
        checks: Vec::new(),
        source_errors: Vec::new(),
    };
    health.overall = overall(&health).into();
    health
}

/// The overall verdict: the runtime first, then whether its route serves it. A runtime stopped
/// on request is `stopped`: what was asked for, not a failure.
pub fn overall(health: &ResourceHealth) -> &'static str {
    match (
        health.runtime.lifecycle.as_str(),
        health.runtime.health.as_str(),
    ) {
        ("not-deployed", _) => "not-deployed",
        ("stopped", _) => "stopped",
        ("unknown", _) | (_, "unknown") => "unknown",
        (_, "unhealthy") | ("exited" | "missing", _) => "unhealthy",
        (_, "starting") => "degraded",
        _ if health.public_access.status == "not-ready" => "degraded",
        _ if health.checks.iter().any(|c| c.status == "failed") => "degraded",
        _ => "healthy",
    }
}

fn runtime_block(observed: Option<&RuntimeObservation>) -> RuntimeBlock {
    let Some(observed) = observed else {
        return RuntimeBlock {
            lifecycle: "unknown".into(),
            health: "unknown".into(),
            observed_at: None,
            runtime_kind: "docker-container".into(),
            reason_code: Some("not_observed".into()),
            message: "the controller has not reported the runtime yet".into(),
        };
    };
    RuntimeBlock {
        lifecycle: lifecycle_name(observed.lifecycle).into(),
        health: health_name(observed.health).into(),
        observed_at: Some(timestamp(&observed.observed_at)),
        runtime_kind: "docker-container".into(),
        reason_code: observed.reason_code.clone(),
        message: observed.message.clone(),
    }
}

pub fn lifecycle_name(lifecycle: RuntimeLifecycle) -> &'static str {
    match lifecycle {
        RuntimeLifecycle::NotDeployed => "not-deployed",
        RuntimeLifecycle::Running => "running",
        RuntimeLifecycle::Exited => "exited",
        RuntimeLifecycle::Missing => "missing",
        RuntimeLifecycle::Stopped => "stopped",
        RuntimeLifecycle::Unknown => "unknown",
    }
}

pub fn health_name(health: RuntimeHealth) -> &'static str {
    match health {
        RuntimeHealth::Healthy => "healthy",
        RuntimeHealth::Unhealthy => "unhealthy",
        RuntimeHealth::Starting => "starting",
        RuntimeHealth::Unknown => "unknown",
    }
}

fn latest_deployment(deployment: &Deployment) -> LatestDeployment {
    let status = deployment.status.clone().unwrap_or_default();
    LatestDeployment {
        id: deployment.name_any(),
        status: status.status.unwrap_or(DeploymentState::Created),
        created_at: deployment
            .metadata
            .creation_timestamp
            .as_ref()
            .map(timestamp),
        started_at: status.started_at.as_ref().map(timestamp),
        finished_at: status.finished_at.as_ref().map(timestamp),
        server_id: deployment.spec.server_id.clone(),
        destination_id: deployment.spec.destination_id.clone(),
        last_error: status
            .last_error
            .as_ref()
            .and_then(|e| berth_vocabulary::wire::to_value(e).ok()),
    }
}

fn health_policy(resource: &Resource) -> HealthPolicy {
    let check: Option<&HealthCheck> = resource
        .spec
        .runtime_profile
        .as_ref()
        .and_then(|r| r.health_check.as_ref());
    let Some(check) = check else {
        return HealthPolicy {
            status: "not-configured".into(),
            enabled: false,
            type_: None,
            path: None,
            port: None,
            expected_status_code: None,
            interval_seconds: None,
            timeout_seconds: None,
            retries: None,
            start_period_seconds: None,
            reason_code: Some("health_check_not_configured".into()),
        };
    };
    let command = check.kind == berth_vocabulary::resource_input::HealthCheckKind::Command;
    HealthPolicy {
        status: "configured".into(),
        enabled: true,
        type_: Some(if command {
            "command".into()
        } else {
            "http".into()
        }),
        path: (!command).then(|| check.path.clone()),
        port: check.port.map(i64::from),
        expected_status_code: Some(i64::from(check.expected_status_code)),
        interval_seconds: Some(i64::from(check.interval_seconds)),
        timeout_seconds: Some(i64::from(check.timeout_seconds)),
        retries: Some(i64::from(check.retries)),
        start_period_seconds: Some(i64::from(check.start_period_seconds)),
        reason_code: None,
    }
}

fn public_access(
    inputs: &Inputs,
    route: Option<&AppliedAccessRoute>,
    route_status: Option<ProxyRouteStatus>,
    runtime: &RuntimeBlock,
) -> PublicAccess {
    let Some(route) = route else {
        return PublicAccess {
            status: "not-configured".into(),
            url: None,
            kind: None,
            reason_code: Some("no_route".into()),
            phase: None,
            route_intent_status: None,
            latest_access_failure: None,
        };
    };
    let (status, reason) = match route_status {
        _ if runtime.lifecycle == "stopped" => ("not-ready", Some("runtime_stopped")),
        Some(ProxyRouteStatus::Ready) if runtime.health == "healthy" => ("ready", None),
        Some(ProxyRouteStatus::Ready) => ("not-ready", Some("runtime_not_ready")),
        Some(ProxyRouteStatus::NotReady | ProxyRouteStatus::Failed) => {
            ("not-ready", Some("route_not_ready"))
        }
        Some(ProxyRouteStatus::Unknown) | None => ("unknown", Some("route_not_observed")),
    };
    PublicAccess {
        status: status.into(),
        url: Some(route.url.clone()),
        kind: Some("generated-latest".into()),
        reason_code: reason.map(String::from),
        phase: reason.map(|_| "edge-request-routing".into()),
        route_intent_status: Some(route_intent(inputs, route, status, reason, runtime)),
        latest_access_failure: None,
    }
}

fn proxy_block(server: Option<&Server>, status: &crate::resource::ResourceStatus) -> ProxyBlock {
    let disabled = server.is_some_and(|s| s.spec.proxy.kind == ProxyKind::None);
    let (state, reason) = if disabled {
        ("not-configured", Some("edge_proxy_disabled"))
    } else {
        match status.proxy_route_status {
            Some(ProxyRouteStatus::Ready) => ("ready", None),
            Some(ProxyRouteStatus::NotReady | ProxyRouteStatus::Failed) => {
                ("not-ready", Some("route_not_ready"))
            }
            _ => ("unknown", Some("route_not_observed")),
        }
    };
    ProxyBlock {
        status: state.into(),
        provider_key: (!disabled).then(|| "caddy".to_string()),
        last_route_realization_deployment_id: status.last_route_realization_deployment_id.clone(),
        reason_code: reason.map(String::from),
    }
}
