//! Platform migration's records (spec §4.9, protocol `platform-migration/v1`): the plan and its
//! steps, the receipt of a completed step, a step's failure and the verify result. The REST API
//! (`berth_api::migrations`) answers with them and the Migration custom resource stores them, so
//! they are defined here, below both. Shapes follow Appaloft 1.10.5; every object is strict: an
//! unknown key is refused, naming it. Fields of the Migration CRD's status (receipts, failure,
//! verify result) carry a doc comment each for `kubectl explain`; the plan, in its spec, is
//! documented only where the REST API's OpenAPI document already described it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol every plan and answer names.
pub const PROTOCOL: &str = "platform-migration/v1";

/// A scalar of a receipt's `output` or an evidence `summary`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum Scalar {
    Text(String),
    Number(i64),
    Flag(bool),
}

// ---------------------------------------------------------------------------------------------
// The plan.

/// What stops a plan from being applied.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields)]
pub struct Blocker {
    /// Machine-readable reason, e.g. `target_missing`.
    pub code: String,
    /// Where in the bundle the blocker is, e.g. `spec.target.deploymentTargetId`.
    pub path: String,
    /// What blocks it and what to do, for a person.
    pub message: String,
}

/// Undoing a step, for cleanup.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepCleanup {
    /// The operation that undoes the step, e.g. `projects.delete`.
    pub operation_key: String,
    /// Always `created-by-receipt`: only what a receipt says was created is undone.
    pub ownership: String,
    /// The undoing operation's input, with the same placeholders as a step's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BTreeMap<String, Value>>")]
    pub input: Option<serde_json::Map<String, Value>>,
}

/// One ordinary operation of the plan. `input` may hold `{"$ref":
/// "steps.<id>.output.<name>"}` and `{"$secretRef": "<ref>"}` placeholders.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// Id of the step, unique in the plan, e.g. `project:create`.
    pub id: String,
    /// The REST operation the step runs, e.g. `projects.create`.
    pub operation_key: String,
    /// Ids of the steps that must complete first.
    pub depends_on: Vec<String>,
    /// The operation's request body, with `$ref` and `$secretRef` placeholders.
    #[schemars(with = "BTreeMap<String, Value>")]
    pub input: serde_json::Map<String, Value>,
    /// Output name → the field of the operation's result it is read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produces: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<StepCleanup>,
}

/// `ready` or `blocked` (blocked ⇔ blockers non-empty).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PlanState {
    Ready,
    Blocked,
}

/// The answer of `plan`, sent back unchanged to apply, status, verify and cleanup.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MigrationPlan {
    /// `platform-migration/v1`.
    pub protocol: String,
    pub state: PlanState,
    /// `sha256:<hex>` of the bundle the plan was made from.
    pub bundle_digest: String,
    /// `sha256:<hex>` over the other six fields (RFC 8785, keys sorted).
    pub plan_digest: String,
    /// The operations, in an order that honours `dependsOn`.
    pub steps: Vec<Step>,
    /// What stops the plan from being applied; empty when `state` is `ready`.
    pub blockers: Vec<Blocker>,
    /// What the plan will not carry over or does differently, for a person to read first.
    pub warnings: Vec<String>,
    /// Berth's addition: every variable of the bundle and how it is migrated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variable_report: Vec<VariableReport>,
    /// Berth's addition: `hmac-sha256:<hex>` of `planDigest` under the shim's key, so a plan
    /// edited by a client (even with its digest recomputed) is refused at apply. Not part of
    /// the digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attestation: Option<String>,
}

/// How one variable of the source is migrated (never its value).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VariableReport {
    /// The variable's name.
    pub key: String,
    /// The resource ref, or absent for the environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<String>,
    /// `value` | `secret-ref` | `dependency-binding` | `not-migrated`.
    pub migrated_as: String,
    /// Why it is migrated so, or what to do by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// What apply, cleanup and verify record.

/// A completed step.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    /// Id of the plan's step it completes.
    pub step_id: String,
    /// The operation the step ran.
    pub operation_key: String,
    /// Always `completed`.
    pub state: String,
    /// Each output the step produces (an id of what it made or reused), by name; later steps'
    /// `$ref` placeholders read them.
    pub output: BTreeMap<String, Scalar>,
    /// `created` or `reused` (an object that existed before; cleanup never touches it).
    pub ownership: String,
}

/// Why a step failed during apply or cleanup (a 200 answer, not an HTTP error).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepFailure {
    /// Id of the step that failed.
    pub step_id: String,
    /// The operation the step ran.
    pub operation_key: String,
    /// Stable error code, e.g. `validation_error`.
    pub code: String,
    /// Whose the problem is: `user`, `infra`, …
    pub category: String,
    /// What went wrong; never a secret value.
    pub message: String,
    /// Whether running the step again may succeed without a change (Appaloft's name; tasks
    /// written before it said `retriable`).
    #[serde(default, alias = "retriable")]
    pub retryable: bool,
}

/// What one read-back query found.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Evidence {
    /// Id of the step whose result was read back.
    pub step_id: String,
    /// The operation the step ran.
    pub operation_key: String,
    /// The read-back query, e.g. `EffectiveConfigQuery`.
    pub query_name: String,
    /// `available` | `absent` | `unavailable`.
    pub state: String,
    /// `passed` | `attention` | `observed` | `unavailable`.
    pub evaluation: String,
    /// Bounded, allow-listed facts the query found, by name.
    pub summary: BTreeMap<String, Scalar>,
    /// Why the query could not answer, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VerificationResult {
    /// `platform-migration/v1`.
    pub protocol: String,
    /// The digest of the plan verified.
    pub plan_digest: String,
    /// `passed` | `attention` | `incomplete`.
    pub state: String,
    /// One entry per read-back query.
    pub evidence: Vec<Evidence>,
}
