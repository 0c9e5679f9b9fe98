//! The Diagnostic summary record (spec §2.2, `resources.diagnostic-summary/v1`) and the pure
//! parts of building it from a Resource, its Deployment and its health record.

use berth_crds::deployment::Deployment;
use berth_crds::health::{PublicAccess, ResourceHealth, RouteIntentStatus};
use berth_crds::resource::Resource;
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub const SCHEMA_VERSION: &str = "resources.diagnostic-summary/v1";

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticSummary {
    pub schema_version: &'static str,
    pub generated_at: String,
    pub focus: Focus,
    pub context: Context,
    pub deployment: Option<DeploymentBlock>,
    pub access: Access,
    pub proxy: Proxy,
    pub deployment_timeline: Tail,
    pub runtime_logs: Tail,
    pub system: System,
    pub source_errors: Vec<SourceError>,
    pub redaction: Redaction,
    /// The record ready to paste into a support ticket; nothing secret in any of them.
    pub copy: Copy,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Focus {
    pub resource_id: String,
    pub requested_deployment_id: Option<String>,
    pub deployment_id: Option<String>,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub project_id: String,
    pub environment_id: String,
    pub resource_name: String,
    pub resource_slug: String,
    pub resource_kind: String,
    pub destination_id: Option<String>,
    pub server_id: Option<String>,
    pub runtime_strategy: &'static str,
    /// `dockerfile` (built from a source) or `prebuilt-image`.
    pub build_strategy: &'static str,
    pub packaging_mode: &'static str,
    pub target_kind: &'static str,
    pub target_provider_key: &'static str,
    pub services: Vec<Value>,
    pub network_profile: Option<Value>,
    /// The window asked for (`observationFrom`, `observationTo`); one end given alone runs
    /// from the resource's creation or to now.
    pub observation_window: Option<Window>,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub from: String,
    pub to: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentBlock {
    pub id: String,
    /// `created` until the attempt reports another.
    pub status: String,
    /// The attempt's place in its lifecycle: its status (the spec's value set is the
    /// statuses'); the step it is in is `status.currentStep` of the Deployment.
    pub lifecycle_phase: String,
    pub runtime_plan_id: Option<String>,
    pub source_kind: Option<String>,
    pub source_display_name: Option<String>,
    pub server_id: String,
    pub destination_id: Option<String>,
    pub created_at: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub timeline_count: i64,
    pub last_error: Option<LastError>,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    pub timestamp: String,
    pub phase: String,
    /// The deployment error code (README "Deployment error codes").
    pub code: String,
    pub message: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    /// `available`, `unavailable` or `not-configured`.
    pub status: &'static str,
    pub generated_url: Option<String>,
    pub durable_url: Option<String>,
    pub server_applied_url: Option<String>,
    pub planned_url: Option<String>,
    pub latest_access_failure: Option<Value>,
    /// The route a client reaches the resource by: the first of `routeIntentStatuses`.
    pub selected_route: Option<RouteIntentStatus>,
    pub route_intent_statuses: Vec<RouteIntentStatus>,
    pub proxy_route_status: Option<String>,
    pub last_route_realization_deployment_id: Option<String>,
    pub reason_code: Option<&'static str>,
    pub phase: Option<&'static str>,
}

#[derive(Serialize, JsonSchema, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// `available` (the route serves), `unavailable`, `not-configured` (no edge proxy) or
    /// `unknown`.
    pub status: &'static str,
    pub provider_key: Option<String>,
    /// The resource's route on the proxy: `unknown`, `ready`, `not-ready` or `failed`.
    pub proxy_route_status: Option<String>,
    pub configuration_included: bool,
    /// With `includeProxyConfiguration`: `applied` (read from the proxy) or `not-configured`
    /// (the proxy holds no route for the resource); absent when it could not be read.
    pub configuration_status: Option<&'static str>,
    pub configuration_generated_at: Option<String>,
    pub route_count: usize,
    pub section_count: usize,
    pub sections: Vec<Section>,
    pub tls_routes: Vec<TlsRoute>,
    pub warnings: Vec<Warning>,
    pub reason_code: Option<&'static str>,
    pub phase: Option<&'static str>,
}

/// One block of proxy configuration, secrets redacted.
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Section {
    pub id: &'static str,
    pub title: &'static str,
    /// `json` (Caddy's route) or `docker-labels`.
    pub format: &'static str,
    pub redacted: bool,
    /// `snapshot` (read from the proxy as applied) or `provider-rendered` (what Berth would
    /// write for another provider).
    pub source: &'static str,
    pub content: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct TlsRoute {
    pub hostname: String,
    pub path_prefix: String,
    pub tls_mode: &'static str,
    pub scheme: String,
    pub automation: &'static str,
    pub certificate_source: &'static str,
    pub platform_certificate_managed: bool,
    pub message: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    pub code: &'static str,
    pub message: String,
    pub details: Value,
}

/// A tail of lines (deployment timeline or runtime logs).
#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Tail {
    /// `available`, `not-requested`, `empty` or `unavailable`.
    pub status: &'static str,
    pub tail_limit: u64,
    pub line_count: usize,
    pub lines: Vec<LogLine>,
    pub reason_code: Option<&'static str>,
    pub phase: Option<&'static str>,
}

impl Tail {
    pub fn not_requested(tail_limit: u64) -> Self {
        Self::of("not-requested", tail_limit, Vec::new())
    }

    pub fn lines(tail_limit: u64, lines: Vec<LogLine>) -> Self {
        let status = if lines.is_empty() {
            "empty"
        } else {
            "available"
        };
        Self::of(status, tail_limit, lines)
    }

    pub fn unavailable(tail_limit: u64, reason: &'static str, phase: &'static str) -> Self {
        Self {
            reason_code: Some(reason),
            phase: Some(phase),
            ..Self::of("unavailable", tail_limit, Vec::new())
        }
    }

    fn of(status: &'static str, tail_limit: u64, lines: Vec<LogLine>) -> Self {
        Self {
            status,
            tail_limit,
            line_count: lines.len(),
            lines,
            reason_code: None,
            phase: None,
        }
    }
}

/// Spec §2.2 "Diagnostic log line": a deployment timeline entry, or a line the runtime wrote
/// (which has no deployment phase or level).
#[derive(Serialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    pub timestamp: Option<String>,
    /// `platform` or `application`.
    pub source: String,
    pub phase: Option<String>,
    pub level: Option<String>,
    /// `stdout` or `stderr`.
    pub stream: Option<String>,
    pub service_name: Option<String>,
    pub message: String,
    /// Whether a secret value was replaced in `message`.
    pub masked: bool,
}

impl LogLine {
    /// A deployment timeline entry, its message masked (`masked` says whether anything was).
    pub fn of_event(
        event: &berth_api::progress::ProgressEvent,
        message: String,
        masked: bool,
    ) -> Self {
        Self {
            timestamp: Some(event.timestamp.clone()),
            source: wire_name(event.source).unwrap_or_default(),
            phase: wire_name(event.phase),
            level: wire_name(event.level),
            stream: event.stream.and_then(wire_name),
            service_name: None,
            message,
            masked,
        }
    }
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct System {
    pub entrypoint: &'static str,
    pub request_id: String,
    pub locale: String,
    pub readiness_status: &'static str,
    /// `sqlite` or `postgresql`: the observation store's.
    pub database_driver: &'static str,
    /// `embedded` (a file beside Berth) or `shared` (a database server).
    pub database_mode: &'static str,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct SourceError {
    pub source: &'static str,
    pub code: &'static str,
    pub category: &'static str,
    pub phase: &'static str,
    pub retryable: bool,
    pub related_entity_id: Option<String>,
    pub related_state: Option<String>,
    pub message: String,
}

#[derive(Serialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Redaction {
    pub policy: &'static str,
    pub masked: bool,
    pub masked_value_count: usize,
}

#[derive(Serialize, JsonSchema, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Copy {
    pub json: String,
    pub markdown: String,
    pub plain_text: String,
}

pub fn context(resource: &Resource, window: Option<Window>) -> Context {
    let spec = &resource.spec;
    Context {
        project_id: spec.project_id.clone(),
        environment_id: spec.environment_id.clone(),
        resource_name: spec.name.clone(),
        resource_slug: resource.host_slug(),
        resource_kind: wire_name(spec.kind).unwrap_or_default(),
        destination_id: spec.destination_id.clone(),
        server_id: spec.server_id.clone(),
        runtime_strategy: "docker-container",
        build_strategy: match spec.source.as_ref().map(|s| s.kind.as_str()) {
            Some("docker-image") => "prebuilt-image",
            _ => "dockerfile",
        },
        packaging_mode: "split-deploy",
        target_kind: "single-server",
        target_provider_key: "ssh-docker",
        services: spec
            .services
            .iter()
            .filter_map(|s| berth_api::wire::to_value(s).ok())
            .collect(),
        network_profile: spec
            .network_profile
            .as_ref()
            .and_then(|n| berth_api::wire::to_value(n).ok()),
        observation_window: window,
    }
}

/// How an enum serializes (its wire name), e.g. `succeeded` for a deployment state.
pub fn wire_name<T: Serialize>(value: T) -> Option<String> {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
}

pub fn deployment_block(deployment: &Deployment, timeline_count: i64) -> DeploymentBlock {
    let status = deployment.status.clone().unwrap_or_default();
    let source = deployment.spec.source_snapshot.as_ref();
    let state = status
        .status
        .and_then(wire_name)
        .unwrap_or_else(|| "created".into());
    DeploymentBlock {
        id: deployment.name_any(),
        lifecycle_phase: state.clone(),
        status: state,
        runtime_plan_id: status.image_ref.clone(),
        source_kind: source.map(|s| s.kind.clone()),
        source_display_name: source.map(|s| {
            s.display_name
                .clone()
                .unwrap_or_else(|| without_userinfo(&s.locator))
        }),
        server_id: deployment.spec.server_id.clone(),
        destination_id: deployment.spec.destination_id.clone(),
        created_at: deployment
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        started_at: status.started_at.as_ref().map(|t| t.0.to_string()),
        finished_at: status.finished_at.as_ref().map(|t| t.0.to_string()),
        timeline_count,
        last_error: status.last_error.as_ref().map(|error| LastError {
            timestamp: error.timestamp.0.to_string(),
            phase: wire_name(error.phase).unwrap_or_default(),
            code: wire_name(error.code).unwrap_or_default(),
            message: error.message.clone(),
        }),
    }
}

/// A locator as shown: a URL's `user:password@` part never is.
fn without_userinfo(locator: &str) -> String {
    match locator.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((userinfo, host)) if !userinfo.contains('/') => format!("{scheme}://{host}"),
            _ => locator.to_string(),
        },
        None => locator.to_string(),
    }
}

/// The access block: the resource's routes as its status records them, and the verdict the
/// health record reached about the generated one.
pub fn access(resource: &Resource, health: &ResourceHealth) -> Access {
    let status = resource.status.clone().unwrap_or_default();
    let summary = status.access_summary.unwrap_or_default();
    let url = |route: &Option<berth_crds::resource::AppliedAccessRoute>| {
        route.as_ref().map(|r| r.url.clone())
    };
    let public: &PublicAccess = &health.public_access;
    let (state, reason) = match public.status {
        "ready" => ("available", None),
        "not-configured" => ("not-configured", public.reason_code),
        _ => ("unavailable", public.reason_code),
    };
    let routes: Vec<RouteIntentStatus> = public.route_intent_status.iter().cloned().collect();
    Access {
        status: state,
        generated_url: url(&summary.latest_generated_access_route),
        durable_url: url(&summary.latest_durable_domain_route),
        server_applied_url: url(&summary.latest_server_applied_domain_route),
        planned_url: summary
            .planned_generated_access_route
            .as_ref()
            .map(|r| r.url.clone()),
        latest_access_failure: public.latest_access_failure.clone(),
        selected_route: routes.first().cloned(),
        route_intent_statuses: routes,
        proxy_route_status: status.proxy_route_status.and_then(wire_name),
        last_route_realization_deployment_id: status.last_route_realization_deployment_id,
        reason_code: reason,
        phase: public.phase,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locator_is_shown_without_credentials() {
        assert_eq!(
            without_userinfo("https://bot:s3cret@git.example/app.git"),
            "https://git.example/app.git"
        );
        assert_eq!(without_userinfo("/srv/app"), "/srv/app");
        assert_eq!(
            without_userinfo("https://git.example/a@b"),
            "https://git.example/a@b"
        );
    }
}
