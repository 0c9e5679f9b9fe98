//! The Resource health record (spec §2.2 "Resource health", `resources.health/v1`), built from
//! what Berth already knows: the Resource's status (its runtime as the server observer last saw
//! it, its route), its latest Deployment and its server. Pure, so the rules are unit-tested;
//! the REST shim serves it and the controller records it in the health history.

use crate::deployment::{Deployment, DeploymentState};
use crate::resource::{
    AppliedAccessRoute, HealthCheck, ProxyRouteStatus, Resource, RuntimeHealth, RuntimeLifecycle,
    RuntimeObservation,
};
use crate::runtime_control::{
    PhaseStatus, RuntimeControlAttempt, RuntimeControlState, RuntimeOperation, RuntimeState,
};
use crate::server::{ProxyKind, Server};
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub const SCHEMA_VERSION: &str = "resources.health/v1";
pub const ROUTE_INTENT_SCHEMA_VERSION: &str = "route-intent-status/v1";

/// Spec §2.2 "Resource health".
#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourceHealth {
    pub schema_version: &'static str,
    pub resource_id: String,
    pub generated_at: String,
    /// When the runtime state shown was observed.
    pub observed_at: Option<String>,
    /// `healthy`, `degraded` (runs, but not reachable through its route), `unhealthy`,
    /// `stopped` (stopped on request: runtime control; not a failure), `not-deployed` or
    /// `unknown`.
    pub overall: &'static str,
    /// Whether a part could not be read (see `sourceErrors`).
    pub partial: bool,
    pub latest_deployment: Option<LatestDeployment>,
    pub runtime: RuntimeBlock,
    /// The latest stop, start or restart (`POST /resources/{id}/runtime-control` or
    /// `spec.runtime`); null when there never was one.
    pub latest_runtime_control: Option<RuntimeControlBlock>,
    pub health_policy: HealthPolicy,
    pub public_access: PublicAccess,
    pub proxy: ProxyBlock,
    /// Present when `includeChecks` (or a probe) was asked for.
    pub checks: Vec<Check>,
    pub source_errors: Vec<SourceError>,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LatestDeployment {
    pub id: String,
    /// `created` until the attempt reports another.
    pub status: DeploymentState,
    pub created_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub server_id: String,
    pub destination_id: Option<String>,
    pub last_error: Option<Value>,
}

/// Spec §2.2 `latestRuntimeControl`: one runtime control attempt and its phases.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlBlock {
    pub runtime_control_attempt_id: String,
    /// `stop`, `start` or `restart`.
    pub operation: RuntimeOperation,
    /// `accepted`, `running`, `succeeded`, `failed` or `blocked`.
    pub status: RuntimeControlState,
    pub started_at: String,
    pub completed_at: Option<String>,
    /// `running`, `starting`, `stopping`, `stopped`, `restarting`, `not-deployed` or `unknown`.
    pub runtime_state: RuntimeState,
    /// e.g. `resource-archived`.
    pub blocked_reason: Option<String>,
    pub error_code: Option<String>,
    pub phases: Vec<RuntimeControlPhaseBlock>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeControlPhaseBlock {
    /// `validate`, `stop`, `start` or `verify`.
    pub phase: String,
    /// `pending`, `running`, `succeeded`, `failed` or `skipped`.
    pub status: PhaseStatus,
    pub error_code: Option<String>,
}

/// The `latestRuntimeControl` block of a runtime control attempt (the Resource's
/// `status.runtimeControl.latest`, or the record the REST action answers with).
pub fn runtime_control_block(attempt: &RuntimeControlAttempt) -> RuntimeControlBlock {
    RuntimeControlBlock {
        runtime_control_attempt_id: attempt.runtime_control_attempt_id.clone(),
        operation: attempt.operation,
        status: attempt.status,
        started_at: timestamp(&attempt.started_at),
        completed_at: attempt.completed_at.as_ref().map(timestamp),
        runtime_state: attempt.runtime_state,
        blocked_reason: attempt.blocked_reason.clone(),
        error_code: attempt.error_code.clone(),
        phases: attempt
            .phases
            .iter()
            .map(|p| RuntimeControlPhaseBlock {
                phase: p.phase.clone(),
                status: p.status,
                error_code: p.error_code.clone(),
            })
            .collect(),
    }
}

/// The runtime as the controller observed it. Its states are the controller's (a removed
/// container is `missing`, a Docker health check `starting`); the wire names them with the
/// spec's value sets ([`wire_runtime`]).
#[derive(JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeBlock {
    /// `not-deployed`, `starting`, `running`, `exited`, `stopped` (on request) or `unknown`
    /// (with `reasonCode: runtime_missing` for a container removed by hand).
    pub lifecycle: String,
    /// `healthy`, `unhealthy` or `unknown` (also while a health check is starting).
    pub health: String,
    pub observed_at: Option<String>,
    pub runtime_kind: &'static str,
    pub reason_code: Option<String>,
    pub message: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct HealthPolicy {
    /// `configured` or `not-configured` (then the deploy checks only that the port answers).
    pub status: &'static str,
    pub enabled: bool,
    #[serde(rename = "type")]
    pub type_: Option<&'static str>,
    pub path: Option<String>,
    pub port: Option<i64>,
    pub expected_status_code: Option<i64>,
    pub interval_seconds: Option<i64>,
    pub timeout_seconds: Option<i64>,
    pub retries: Option<i64>,
    pub start_period_seconds: Option<i64>,
    pub reason_code: Option<&'static str>,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PublicAccess {
    /// `ready`, `not-ready`, `unknown` or `not-configured`.
    pub status: &'static str,
    pub url: Option<String>,
    /// `generated-latest` (Berth's generated host, as last applied).
    pub kind: Option<&'static str>,
    pub reason_code: Option<&'static str>,
    pub phase: Option<&'static str>,
    pub route_intent_status: Option<RouteIntentStatus>,
    /// The resource's most recent unexpired access-failure evidence.
    pub latest_access_failure: Option<Value>,
}

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

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ProxyBlock {
    /// `ready`, `not-ready`, `not-configured` (the server runs no edge proxy) or `unknown`.
    pub status: &'static str,
    pub provider_key: Option<String>,
    pub last_route_realization_deployment_id: Option<String>,
    pub reason_code: Option<&'static str>,
}

/// One check (spec: name, target, status, observedAt, durationMs, statusCode, exitCode, message,
/// reasonCode, phase, retriable, metadata).
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub name: &'static str,
    /// `runtime` or `public-access`.
    pub target: &'static str,
    /// `passed`, `failed` or `skipped`.
    pub status: &'static str,
    pub observed_at: String,
    pub duration_ms: Option<u64>,
    pub status_code: Option<u16>,
    pub exit_code: Option<i64>,
    pub message: String,
    pub reason_code: Option<String>,
    pub phase: Option<&'static str>,
    pub retriable: bool,
    pub metadata: Value,
}

/// A part of the record that could not be read; the rest still is (spec §2.2 conventions).
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceError {
    /// `deployment`, `runtime`, `health-policy`, `health-check`, `proxy`, `public-access`,
    /// `domain-binding` or `runtime-control`.
    pub source: &'static str,
    pub code: &'static str,
    /// `infra`: what failed is Berth's or the server's, not the caller's.
    pub category: &'static str,
    /// What was being read, e.g. `runtime-probe`.
    pub phase: &'static str,
    pub retriable: bool,
    pub message: String,
}

impl SourceError {
    /// A part that could not be read for a passing reason, worth asking again.
    pub fn infra(
        source: &'static str,
        code: &'static str,
        phase: &'static str,
        message: String,
    ) -> Self {
        Self {
            source,
            code,
            category: "infra",
            phase,
            retriable: true,
            message,
        }
    }
}

/// The runtime's states with the spec's value sets (Appaloft's closed ones): a container
/// removed by hand (`missing`) is `unknown`, one whose health check is still starting runs as
/// `starting` with its health `unknown`. Returns `(lifecycle, health, reason for the first)`.
pub fn wire_runtime(lifecycle: &str, health: &str) -> (String, String, Option<&'static str>) {
    let health_known = ["healthy", "unhealthy", "unknown", "not-configured"].contains(&health);
    let wire_health = if health_known { health } else { "unknown" };
    let (lifecycle, reason) = match (lifecycle, health) {
        ("missing", _) => ("unknown", Some("runtime_missing")),
        ("running", "starting") => ("starting", None),
        (other, _) => (other, None),
    };
    (lifecycle.to_string(), wire_health.to_string(), reason)
}

impl Serialize for RuntimeBlock {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (lifecycle, health, reason) = wire_runtime(&self.lifecycle, &self.health);
        let reason_code = self.reason_code.as_deref().or(reason);
        let mut block = serializer.serialize_struct("RuntimeBlock", 6)?;
        block.serialize_field("lifecycle", &lifecycle)?;
        block.serialize_field("health", &health)?;
        block.serialize_field("observedAt", &self.observed_at)?;
        block.serialize_field("runtimeKind", &self.runtime_kind)?;
        block.serialize_field("reasonCode", &reason_code)?;
        block.serialize_field("message", &self.message)?;
        block.end()
    }
}

impl ResourceHealth {
    /// The record as the wire has it (no `null` field): what the health history keeps.
    pub fn to_json(&self) -> Value {
        berth_vocabulary::wire::to_value(self).unwrap_or_default()
    }
}

/// A health record the observation store kept, as the wire has it: records written before the
/// wire's rules held `null`s and the controller's own names for some states.
pub fn stored_to_wire(mut summary: Value) -> Value {
    strip_nulls(&mut summary);
    let text = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if let (Some(lifecycle), Some(health)) = (
        text(&summary, "/runtime/lifecycle"),
        text(&summary, "/runtime/health"),
    ) {
        let (lifecycle, health, reason) = wire_runtime(&lifecycle, &health);
        let runtime = &mut summary["runtime"];
        runtime["lifecycle"] = lifecycle.into();
        runtime["health"] = health.into();
        if let (Some(reason), None) = (reason, runtime.get("reasonCode")) {
            runtime["reasonCode"] = reason.into();
        }
    }
    if let Some(deployment) = summary.get_mut("latestDeployment")
        && deployment.get("status").is_none()
    {
        deployment["status"] = "created".into();
    }
    let access_ready = text(&summary, "/publicAccess/status").as_deref() == Some("ready");
    rename(
        &mut summary,
        "/publicAccess/kind",
        "generated",
        "generated-latest",
    );
    let applied = if access_ready { "ready" } else { "applied" };
    rename(
        &mut summary,
        "/publicAccess/routeIntentStatus/proxy/applied",
        "configured",
        applied,
    );
    let summary_status = "/publicAccess/routeIntentStatus/copySafeSummary/status";
    rename(&mut summary, summary_status, "ready", "available");
    rename(&mut summary, "/proxy/status", "disabled", "not-configured");
    let errors = summary
        .get("sourceErrors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    summary["sourceErrors"] = errors.into_iter().map(stored_source_error).collect();
    summary
}

/// Replaces the string at `pointer` when it is `from`.
fn rename(value: &mut Value, pointer: &str, from: &str, to: &str) {
    if let Some(slot) = value.pointer_mut(pointer)
        && slot == from
    {
        *slot = to.into();
    }
}

/// A `sourceErrors` entry written before the wire's rules (`retryable`, sources of its own).
fn stored_source_error(mut error: Value) -> Value {
    let Some(object) = error.as_object_mut() else {
        return error;
    };
    if let Some(retryable) = object.remove("retryable") {
        object.entry("retriable").or_insert(retryable);
    }
    let source = match object.get("source").and_then(Value::as_str) {
        Some("server") => Some("runtime"),
        Some("access-failure-evidence") => Some("public-access"),
        _ => None,
    };
    if let Some(source) = source {
        object.insert("source".into(), source.into());
    }
    object.entry("category").or_insert("infra".into());
    object.entry("phase").or_insert("health-read".into());
    error
}

/// Removes every `null` member, at any depth.
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|_, member| !member.is_null());
            members.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// A Kubernetes time as the API shows it (RFC 3339, UTC `Z`).
fn timestamp(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> String {
    time.0.to_string()
}

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
        schema_version: SCHEMA_VERSION,
        resource_id: resource.name_any(),
        generated_at: inputs.now.clone(),
        observed_at: runtime.observed_at.clone(),
        overall: "unknown",
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
    health.overall = overall(&health);
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
            runtime_kind: "docker-container",
            reason_code: Some("not_observed".into()),
            message: "the controller has not reported the runtime yet".into(),
        };
    };
    RuntimeBlock {
        lifecycle: lifecycle_name(observed.lifecycle).into(),
        health: health_name(observed.health).into(),
        observed_at: Some(timestamp(&observed.observed_at)),
        runtime_kind: "docker-container",
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
            status: "not-configured",
            enabled: false,
            type_: None,
            path: None,
            port: None,
            expected_status_code: None,
            interval_seconds: None,
            timeout_seconds: None,
            retries: None,
            start_period_seconds: None,
            reason_code: Some("health_check_not_configured"),
        };
    };
    let command = check.kind == berth_vocabulary::resource_input::HealthCheckKind::Command;
    HealthPolicy {
        status: "configured",
        enabled: true,
        type_: Some(if command { "command" } else { "http" }),
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
            status: "not-configured",
            url: None,
            kind: None,
            reason_code: Some("no_route"),
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
        status,
        url: Some(route.url.clone()),
        kind: Some("generated-latest"),
        reason_code: reason,
        phase: reason.map(|_| "edge-request-routing"),
        route_intent_status: Some(route_intent(inputs, route, status, reason, runtime)),
        latest_access_failure: None,
    }
}

fn route_intent(
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
        status: state,
        provider_key: (!disabled).then(|| "caddy".to_string()),
        last_route_realization_deployment_id: status.last_route_realization_deployment_id.clone(),
        reason_code: reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    fn resource(status: Option<ResourceStatus>) -> Resource {
        let mut resource: Resource = serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "res-1", "namespace": "org-a"},
            "spec": {"projectId": "p", "environmentId": "e", "name": "Web", "kind": "application"},
        }))
        .unwrap();
        resource.status = status;
        resource
    }

    fn runtime(lifecycle: RuntimeLifecycle, health: RuntimeHealth) -> RuntimeObservation {
        RuntimeObservation {
            lifecycle,
            health,
            observed_at: Time(Timestamp::UNIX_EPOCH),
            deployment_id: Some("dep-1".into()),
            reason_code: None,
            message: "m".into(),
            exit_code: None,
            oom_killed: false,
        }
    }

    fn verdict(status: Option<ResourceStatus>) -> ResourceHealth {
        build(&Inputs {
            resource: &resource(status),
            latest: None,
            server: None,
            now: "2026-11-23T00:00:00Z".into(),
        })
    }

    fn with(runtime: RuntimeObservation, route: ProxyRouteStatus) -> Option<ResourceStatus> {
        Some(ResourceStatus {
            runtime: Some(runtime),
            proxy_route_status: Some(route),
            ..Default::default()
        })
    }

    #[test]
    fn the_latest_runtime_control_comes_from_the_status() {
        use crate::runtime_control::{
            DesiredRuntimeState, RuntimeControlSpec, RuntimeControlStatus,
        };
        assert_eq!(verdict(None).latest_runtime_control, None);
        let wish = RuntimeControlSpec {
            desired_state: DesiredRuntimeState::Stopped,
            restart_requested_at: None,
        };
        let mut latest = RuntimeControlAttempt::accepted(
            "rtc-res-1-4".into(),
            RuntimeOperation::Stop,
            &wish,
            Time(Timestamp::UNIX_EPOCH),
        );
        latest.status = RuntimeControlState::Blocked;
        latest.blocked_reason = Some("resource-archived".into());
        let status = ResourceStatus {
            runtime_control: Some(RuntimeControlStatus {
                applied_state: DesiredRuntimeState::Running,
                latest,
            }),
            ..Default::default()
        };
        let block = verdict(Some(status)).latest_runtime_control.unwrap();
        let value = serde_json::to_value(&block).unwrap();
        assert_eq!(value["runtimeControlAttemptId"], "rtc-res-1-4");
        assert_eq!(value["operation"], "stop");
        assert_eq!(value["status"], "blocked");
        assert_eq!(value["runtimeState"], "stopping");
        assert_eq!(value["blockedReason"], "resource-archived");
        assert_eq!(value["startedAt"], "1970-01-01T00:00:00Z");
        assert_eq!(
            value["phases"][0],
            serde_json::json!({"phase": "validate", "status": "pending", "errorCode": null})
        );
    }

    #[test]
    fn the_runtime_decides_first_then_the_route() {
        use RuntimeHealth as H;
        use RuntimeLifecycle as L;
        let ready = ProxyRouteStatus::Ready;
        assert_eq!(
            verdict(with(runtime(L::Running, H::Healthy), ready)).overall,
            "healthy"
        );
        assert_eq!(
            verdict(with(runtime(L::Exited, H::Unhealthy), ready)).overall,
            "unhealthy"
        );
        assert_eq!(
            verdict(with(runtime(L::Running, H::Starting), ready)).overall,
            "degraded"
        );
        assert_eq!(
            verdict(with(runtime(L::NotDeployed, H::Unknown), ready)).overall,
            "not-deployed"
        );
        assert_eq!(
            verdict(with(runtime(L::Unknown, H::Unknown), ready)).overall,
            "unknown"
        );
        let stopped = verdict(with(
            runtime(L::Stopped, H::Unknown),
            ProxyRouteStatus::NotReady,
        ));
        assert_eq!(stopped.overall, "stopped");
        assert_eq!(stopped.runtime.lifecycle, "stopped");
        let unobserved = verdict(None);
        assert_eq!(unobserved.overall, "unknown");
        assert_eq!(
            unobserved.runtime.reason_code.as_deref(),
            Some("not_observed")
        );
        assert_eq!(unobserved.public_access.status, "not-configured");
        assert_eq!(unobserved.health_policy.status, "not-configured");
    }
}
