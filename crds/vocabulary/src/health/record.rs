//! The record itself (spec §2.2 "Resource health"): its blocks, checks and source errors, and
//! the runtime's states with the spec's value sets.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{RouteIntentStatus, RuntimeControlBlock};
use crate::deployments::DeploymentState;

/// Spec §2.2 "Resource health".
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ResourceHealth {
    pub schema_version: String,
    pub resource_id: String,
    pub generated_at: String,
    /// When the runtime state shown was observed.
    pub observed_at: Option<String>,
    /// `healthy`, `degraded` (runs, but not reachable through its route), `unhealthy`,
    /// `stopped` (stopped on request: runtime control; not a failure), `not-deployed` or
    /// `unknown`.
    pub overall: String,
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

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
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

/// The runtime as the controller observed it. Its states are the controller's (a removed
/// container is `missing`, a Docker health check `starting`); the wire names them with the
/// spec's value sets ([`wire_runtime`]).
#[derive(Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeBlock {
    /// `not-deployed`, `starting`, `running`, `exited`, `stopped` (on request) or `unknown`
    /// (with `reasonCode: runtime_missing` for a container removed by hand).
    pub lifecycle: String,
    /// `healthy`, `unhealthy` or `unknown` (also while a health check is starting).
    pub health: String,
    pub observed_at: Option<String>,
    pub runtime_kind: String,
    pub reason_code: Option<String>,
    pub message: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct HealthPolicy {
    /// `configured` or `not-configured` (then the deploy checks only that the port answers).
    pub status: String,
    pub enabled: bool,
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub path: Option<String>,
    pub port: Option<i64>,
    pub expected_status_code: Option<i64>,
    pub interval_seconds: Option<i64>,
    pub timeout_seconds: Option<i64>,
    pub retries: Option<i64>,
    pub start_period_seconds: Option<i64>,
    pub reason_code: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PublicAccess {
    /// `ready`, `not-ready`, `unknown` or `not-configured`.
    pub status: String,
    pub url: Option<String>,
    /// `generated-latest` (Berth's generated host, as last applied).
    pub kind: Option<String>,
    pub reason_code: Option<String>,
    pub phase: Option<String>,
    pub route_intent_status: Option<RouteIntentStatus>,
    /// The resource's most recent unexpired access-failure evidence.
    pub latest_access_failure: Option<Value>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ProxyBlock {
    /// `ready`, `not-ready`, `not-configured` (the server runs no edge proxy) or `unknown`.
    pub status: String,
    pub provider_key: Option<String>,
    pub last_route_realization_deployment_id: Option<String>,
    pub reason_code: Option<String>,
}

/// One check (spec: name, target, status, observedAt, durationMs, statusCode, exitCode, message,
/// reasonCode, phase, retriable, metadata).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub name: String,
    /// `runtime` or `public-access`.
    pub target: String,
    /// `passed`, `failed` or `skipped`.
    pub status: String,
    pub observed_at: String,
    pub duration_ms: Option<u64>,
    pub status_code: Option<u16>,
    pub exit_code: Option<i64>,
    pub message: String,
    pub reason_code: Option<String>,
    pub phase: Option<String>,
    pub retriable: bool,
    pub metadata: Value,
}

/// A part of the record that could not be read; the rest still is (spec §2.2 conventions).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceError {
    /// `deployment`, `runtime`, `health-policy`, `health-check`, `proxy`, `public-access`,
    /// `domain-binding` or `runtime-control`.
    pub source: String,
    pub code: String,
    /// `infra`: what failed is Berth's or the server's, not the caller's.
    pub category: String,
    /// What was being read, e.g. `runtime-probe`.
    pub phase: String,
    pub retriable: bool,
    pub message: String,
}

impl SourceError {
    /// A part that could not be read for a passing reason, worth asking again.
    pub fn infra(source: &str, code: &str, phase: &str, message: String) -> Self {
        Self {
            source: source.into(),
            code: code.into(),
            category: "infra".into(),
            phase: phase.into(),
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
        crate::wire::to_value(self).unwrap_or_default()
    }
}
