//! The diagnostic summary (spec §2.2, `resources.diagnostic-summary/v1`): what
//! `GET /resources/{id}/diagnostic-summary` answers, a record to paste into a support ticket.
//! The health record's route intent status it quotes is `berth_vocabulary::health`'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use berth_vocabulary::health::RouteIntentStatus;

use crate::progress::ProgressEvent;
use crate::wire::name_of;

pub const SCHEMA_VERSION: &str = "resources.diagnostic-summary/v1";

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticSummary {
    pub schema_version: String,
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

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Focus {
    pub resource_id: String,
    pub requested_deployment_id: Option<String>,
    pub deployment_id: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    pub project_id: String,
    pub environment_id: String,
    pub resource_name: String,
    pub resource_slug: String,
    pub resource_kind: String,
    pub destination_id: Option<String>,
    pub server_id: Option<String>,
    pub runtime_strategy: String,
    /// `dockerfile` (built from a source) or `prebuilt-image`.
    pub build_strategy: String,
    pub packaging_mode: String,
    pub target_kind: String,
    pub target_provider_key: String,
    pub services: Vec<Value>,
    pub network_profile: Option<Value>,
    /// The window asked for (`observationFrom`, `observationTo`); one end given alone runs
    /// from the resource's creation or to now.
    pub observation_window: Option<Window>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub from: String,
    pub to: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
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

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    pub timestamp: String,
    pub phase: String,
    /// The deployment error code (README "Deployment error codes").
    pub code: String,
    pub message: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    /// `available`, `unavailable` or `not-configured`.
    pub status: String,
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
    pub reason_code: Option<String>,
    pub phase: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// `available` (the route serves), `unavailable`, `not-configured` (no edge proxy) or
    /// `unknown`.
    pub status: String,
    pub provider_key: Option<String>,
    /// The resource's route on the proxy: `unknown`, `ready`, `not-ready` or `failed`.
    pub proxy_route_status: Option<String>,
    pub configuration_included: bool,
    /// With `includeProxyConfiguration`: `applied` (read from the proxy) or `not-configured`
    /// (the proxy holds no route for the resource); absent when it could not be read.
    pub configuration_status: Option<String>,
    pub configuration_generated_at: Option<String>,
    pub route_count: usize,
    pub section_count: usize,
    pub sections: Vec<Section>,
    pub tls_routes: Vec<TlsRoute>,
    pub warnings: Vec<Warning>,
    pub reason_code: Option<String>,
    pub phase: Option<String>,
}

/// One block of proxy configuration, secrets redacted.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Section {
    pub id: String,
    pub title: String,
    /// `json` (Caddy's route) or `docker-labels`.
    pub format: String,
    pub redacted: bool,
    /// `snapshot` (read from the proxy as applied) or `provider-rendered` (what Berth would
    /// write for another provider).
    pub source: String,
    pub content: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct TlsRoute {
    pub hostname: String,
    pub path_prefix: String,
    pub tls_mode: String,
    pub scheme: String,
    pub automation: String,
    pub certificate_source: String,
    pub platform_certificate_managed: bool,
    pub message: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    pub code: String,
    pub message: String,
    pub details: Value,
}

/// A tail of lines (deployment timeline or runtime logs).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Tail {
    /// `available`, `not-requested`, `empty` or `unavailable`.
    pub status: String,
    pub tail_limit: u64,
    pub line_count: usize,
    pub lines: Vec<LogLine>,
    pub reason_code: Option<String>,
    pub phase: Option<String>,
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

    pub fn unavailable(tail_limit: u64, reason: &str, phase: &str) -> Self {
        Self {
            reason_code: Some(reason.into()),
            phase: Some(phase.into()),
            ..Self::of("unavailable", tail_limit, Vec::new())
        }
    }

    fn of(status: &str, tail_limit: u64, lines: Vec<LogLine>) -> Self {
        Self {
            status: status.into(),
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
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
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
    pub fn of_event(event: &ProgressEvent, message: String, masked: bool) -> Self {
        Self {
            timestamp: Some(event.timestamp.clone()),
            source: name_of(event.source).unwrap_or_default(),
            phase: name_of(event.phase),
            level: name_of(event.level),
            stream: event.stream.and_then(name_of),
            service_name: None,
            message,
            masked,
        }
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct System {
    pub entrypoint: String,
    pub request_id: String,
    pub locale: String,
    pub readiness_status: String,
    /// `sqlite` or `postgresql`: the observation store's.
    pub database_driver: String,
    /// `embedded` (a file beside Berth) or `shared` (a database server).
    pub database_mode: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct SourceError {
    pub source: String,
    pub code: String,
    pub category: String,
    pub phase: String,
    pub retryable: bool,
    pub related_entity_id: Option<String>,
    pub related_state: Option<String>,
    pub message: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Redaction {
    pub policy: String,
    pub masked: bool,
    pub masked_value_count: usize,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct Copy {
    pub json: String,
    pub markdown: String,
    pub plain_text: String,
}
