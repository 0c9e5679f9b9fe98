//! `GET /deployments/{deploymentId}/proof` (`deployments.proof/v1`, Appaloft 1.10.5's shape):
//! the evidence that an attempt serves — the health check it passed, the route the edge proxy
//! holds for it, and a request through the edge answered now — and the verdict drawn from it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const PROOF_SCHEMA_VERSION: &str = "deployments.proof/v1";

/// What the evidence says.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ProofVerdict {
    /// It succeeded, serves now, and every check passed.
    Verified,
    /// It succeeded and serves, but part of the evidence could not be read.
    PartiallyVerified,
    /// It has not finished.
    Unverified,
    /// It succeeded, but another attempt serves now.
    Stale,
    /// It did not succeed, or a check of what serves failed.
    Failed,
}

/// How a check came out.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CheckStatus {
    Passed,
    Failed,
    Skipped,
    Unavailable,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PlannedSource {
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PlannedArtifact {
    /// `build-image` or `prebuilt-image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Fingerprint {
    pub fingerprint: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeTarget {
    /// `single-server`.
    pub kind: String,
    pub provider_key: String,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct VerificationStep {
    /// `internal-http` (the health check) or `public-http` (through the edge proxy).
    pub kind: String,
    pub label: String,
}

/// What the attempt set out to do.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct PlannedProof {
    pub source: PlannedSource,
    pub artifact: PlannedArtifact,
    pub resource_profile: Fingerprint,
    pub configuration: Fingerprint,
    pub runtime_target: RuntimeTarget,
    pub verification_steps: Vec<VerificationStep>,
    /// `rebuild-artifact`, `replace-workload`, `apply-route`, `verify-health-policy`.
    pub expected_effects: Vec<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedArtifact {
    pub available: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedWorkload {
    pub available: bool,
    /// The serving container (short id), when it is this attempt's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// The attempt whose container serves now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedConfiguration {
    pub available: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedCheck {
    pub status: CheckStatus,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedRoute {
    pub url: String,
    /// `serve`.
    pub route_behavior: String,
    pub expected_deployment_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_status: Option<i64>,
    pub matched: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedAccess {
    pub status: CheckStatus,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    /// Whether the route the edge proxy holds leads to this attempt's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_targets_workload: Option<bool>,
    pub routes: Vec<ObservedRoute>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedRecovery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_candidate_deployment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
}

/// What is there now.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ObservedProof {
    pub available: bool,
    pub observed_at: String,
    pub artifact: ObservedArtifact,
    pub workload: ObservedWorkload,
    pub configuration: ObservedConfiguration,
    pub health: ObservedCheck,
    pub access: ObservedAccess,
    pub recovery: ObservedRecovery,
}

/// A piece of evidence the verdict rests on.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceReference {
    /// `timeline-entry`, `runtime-readback`, `artifact-identity`, `health-observation`,
    /// `access-observation`, `recovery-readiness`.
    pub kind: String,
    pub reference: String,
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
}

/// Where what was planned and what is observed disagree.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ProofMismatch {
    pub reason_code: String,
    /// `warning`, `error` or `critical`.
    pub severity: String,
    pub expected: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    pub evidence: Vec<EvidenceReference>,
    pub recommended_operations: Vec<String>,
}

/// Evidence that could not be read.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct UnavailableEvidence {
    /// `artifact`, `workload`, `configuration`, `health`, `access`, `recovery`.
    pub kind: String,
    pub reason_code: String,
    pub summary: String,
}

/// `GET /deployments/{deploymentId}/proof`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentProof {
    pub schema_version: String,
    pub deployment_id: String,
    pub resource_id: String,
    pub verdict: ProofVerdict,
    pub planned: PlannedProof,
    pub observed: ObservedProof,
    pub mismatches: Vec<ProofMismatch>,
    pub evidence: Vec<EvidenceReference>,
    pub unavailable_evidence: Vec<UnavailableEvidence>,
    pub generated_at: String,
    /// The attempt's resource version the proof was drawn from.
    pub state_version: String,
}
