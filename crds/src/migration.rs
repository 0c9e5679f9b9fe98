//! Migration: a platform-migration task (spec §4.9): the plan (protocol `platform-migration/v1`),
//! its digest, the confirmations and the receipts. Plans and receipts never hold secret values.

use berth_vocabulary::migrations::{MigrationPlan, Receipt, StepFailure, VerificationResult};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::SHA256_DIGEST_PATTERN;

pub mod progress;

pub use progress::{Progress, phase};

/// Protocol of a migration task.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum MigrationProtocol {
    #[default]
    #[serde(rename = "platform-migration/v1")]
    PlatformMigrationV1,
}

/// A migration task: plan → digest confirmation → apply or resume → verify → optional cleanup.
/// berth-shim writes it when a plan is applied (`POST /migrations/apply`) and records each
/// step's receipt in `status` as the step completes; the steps run as the caller who applied.
/// One written with kubectl (or synced by a GitOps tool) is run by berth-controller's leader,
/// a step at a time, as the organization's owner.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "Migration",
    namespaced,
    shortname = "bmig",
    category = "berth",
    doc = "A platform-migration task: plan, digest, confirmations, receipts and verify result.",
    status = "MigrationStatus",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MigrationSpec {
    /// Protocol of the plan; only `platform-migration/v1`.
    #[serde(default)]
    pub protocol: MigrationProtocol,
    /// The plan as `berth migrate plan` (`POST /migrations/plan`) made it: operations,
    /// dependencies, warnings, blockers and cleanup ownership; refused unless this Berth made
    /// it and its digest is its own.
    pub plan: MigrationPlan,
    /// Digest over the whole plan, `sha256:<64 hex digits>`.
    #[schemars(regex(pattern = SHA256_DIGEST_PATTERN))]
    pub digest: String,
    /// Set to the plan digest to confirm apply; a mismatch is rejected before any effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = SHA256_DIGEST_PATTERN))]
    pub confirmed_digest: Option<String>,
    /// Set to the plan digest a second time to confirm cleanup (owner role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = SHA256_DIGEST_PATTERN))]
    pub cleanup_confirmed_digest: Option<String>,
    /// With cleanup: also remove the database resources and storage volumes it created.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm_data_loss: bool,
    /// Any new value runs a task that stopped on a failure again (kubectl-written tasks; a
    /// failure a retry can fix is retried without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
}

/// Progress of a migration task.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MigrationStatus {
    /// Where the task is, e.g. `planned`, `applying`, `applied`, `verified`, `cleaned-up`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Receipts of completed steps, a prefix of the plan; each holds no secret values.
    #[serde(default)]
    pub receipts: Vec<Receipt>,
    /// Bounded, allow-listed summary of the last verify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_result: Option<VerificationResult>,
    /// Why the last apply or cleanup stopped (step, code, message; never a secret value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<StepFailure>,
    /// Steps whose objects cleanup has removed, newest first; a second cleanup skips them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleaned_step_ids: Vec<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` once the last requested step completed.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The CRD's schema of `spec` or `status`.
    fn schema_of(part: &str) -> Value {
        let crd = crate::all_crds()
            .into_iter()
            .find(|crd| crd.spec.names.kind == "Migration")
            .expect("the Migration CRD");
        let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
        schema["openAPIV3Schema"]["properties"][part].clone()
    }

    fn status_schema() -> Value {
        schema_of("status")
    }

    /// `kubectl explain migration.spec.plan.steps` shows a step's fields, and the API server
    /// refuses a plan of the wrong shape; a step's `input` (any JSON) is kept as it is.
    #[test]
    fn the_plan_is_typed() {
        let plan = &schema_of("spec")["properties"]["plan"];
        assert_eq!(
            plan["properties"]["state"]["enum"],
            json!(["ready", "blocked"])
        );
        let step = &plan["properties"]["steps"]["items"];
        assert_eq!(step["properties"]["operationKey"]["type"], "string");
        let input = &step["properties"]["input"];
        assert_eq!(input["x-kubernetes-preserve-unknown-fields"], true);
        assert!(input.get("additionalProperties").is_none());
    }

    /// `kubectl explain migration.status.receipts` shows a receipt's fields; an output value
    /// (text, number or flag) is kept as it is, since a structural schema has no union.
    #[test]
    fn receipts_failure_and_verify_result_are_typed() {
        let status = status_schema();
        let receipt = &status["properties"]["receipts"]["items"];
        assert_eq!(receipt["properties"]["stepId"]["type"], "string");
        let output = &receipt["properties"]["output"]["additionalProperties"];
        assert_eq!(output["x-kubernetes-preserve-unknown-fields"], true);
        assert!(output.get("anyOf").is_none());
        assert_eq!(
            status["properties"]["failure"]["properties"]["retryable"]["type"],
            "boolean"
        );
        let evidence = &status["properties"]["verifyResult"]["properties"]["evidence"];
        assert_eq!(
            evidence["items"]["properties"]["queryName"]["type"],
            "string"
        );
    }

    /// What the shim stored as untyped maps reads back as the typed records, unchanged.
    #[test]
    fn stored_status_reads_and_writes_the_same_json() {
        let stored = json!({
            "phase": "failed",
            "receipts": [{
                "stepId": "project:create", "operationKey": "projects.create",
                "state": "completed", "output": {"projectId": "prj-a", "count": 2, "fresh": true},
                "ownership": "created",
            }],
            "failure": {
                "stepId": "resource:web", "operationKey": "resources.create",
                "code": "validation_error", "category": "user", "message": "bad port",
                "retryable": true,
            },
            "conditions": [],
        });
        let status: MigrationStatus = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(serde_json::to_value(&status).unwrap(), stored);
    }

    /// A task stored before the failure said `retryable` (Appaloft's name) reads the same.
    #[test]
    fn a_failure_stored_as_retriable_reads_as_retryable() {
        let failure = json!({
            "stepId": "resource:web", "operationKey": "resources.create",
            "code": "conflict", "category": "infra", "message": "busy", "retriable": true,
        });
        let read: StepFailure = serde_json::from_value(failure).unwrap();
        assert!(read.retryable);
        let written = serde_json::to_value(&read).unwrap();
        assert_eq!(written["retryable"], true);
        assert!(written.get("retriable").is_none());
    }
}
