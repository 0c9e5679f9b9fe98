//! Spec §2.2 "Health history" (`resources.health-history/v1`): the health records Berth kept
//! for a resource, what `GET /resources/{resourceId}/health-history` answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::health::SourceError;

pub const SCHEMA_VERSION: &str = "resources.health-history/v1";

/// Spec §2.2 "Health history".
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct HealthHistory {
    pub schema_version: String,
    pub resource_id: String,
    pub from: String,
    pub to: String,
    pub generated_at: String,
    /// Oldest first; the latest `limit` of the window.
    pub observations: Vec<Observation>,
    /// Parts that could not be read (none: a failed store read is a 503).
    pub source_errors: Vec<SourceError>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    pub observation_id: String,
    pub observed_at: String,
    pub overall: String,
    pub runtime_lifecycle: String,
    pub runtime_health: String,
    pub public_access_status: String,
    pub proxy_status: String,
    pub health_policy_status: String,
    pub latest_deployment_id: Option<String>,
    /// The Resource health record (`resources.health/v1`) as it was then. Untyped: a record
    /// kept before a field was added lacks it.
    pub summary: Value,
}
