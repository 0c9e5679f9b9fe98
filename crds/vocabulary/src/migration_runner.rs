//! How berth-controller's leader asks berth-shim to run the next step of a Migration written
//! with kubectl (or synced by a GitOps tool). The steps are ordinary REST operations, so they
//! run in the shim, through the same routing and checks as a request from outside; the
//! controller decides when a task needs work and records each answer in the task's status.
//! Internal: not part of the REST API nor its OpenAPI document.

use serde::{Deserialize, Serialize};

use crate::migrations::{Receipt, StepFailure};

/// Marks a task applied over REST (`POST /migrations/apply`): its REST caller runs it, never
/// berth-controller, which runs the tasks written with kubectl.
pub const RUNNER_ANNOTATION: &str = "berth.dev/migration-runner";
/// [`RUNNER_ANNOTATION`]'s value.
pub const RUNNER_API: &str = "api";

/// The Secret, in Berth's system namespace, holding the bearer token of these calls: made by
/// the controller, read by the shim; only Berth's own service accounts can read it.
pub const TOKEN_SECRET: &str = "berth-migration-runner";
/// The Secret's key holding the token.
pub const TOKEN_KEY: &str = "token";

/// The route, as berth-shim serves it.
pub const NEXT_STEP_ROUTE: &str = "/internal/migrations/{namespace}/{name}/next-step";

/// The path of the next step of the Migration `name` in `namespace`.
pub fn next_step_path(namespace: &str, name: &str) -> String {
    format!("/internal/migrations/{namespace}/{name}/next-step")
}

/// What a task asks for now.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Work {
    Apply,
    Cleanup,
}

/// Run the next step of `work`, from the task as it was at `resourceVersion` (a task changed
/// since is refused with 409: its new version is read and asked again).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NextStepRequest {
    pub work: Work,
    pub resource_version: String,
}

/// What the next step did.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(
    tag = "outcome",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum NextStep {
    /// A step of the plan completed (apply).
    Applied { receipt: Receipt },
    /// What a step created was removed, or was gone already (cleanup).
    Undone { step_id: String },
    /// The step failed: retried later if the failure says a retry can fix it, else it waits
    /// for a person (a change of the task's spec).
    Stopped { failure: StepFailure },
    /// Nothing is left to do: every step applied, or every created object removed.
    Finished,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_names_its_outcome() {
        let undone = NextStep::Undone {
            step_id: "project:create".into(),
        };
        assert_eq!(
            serde_json::to_value(&undone).unwrap(),
            json!({"outcome": "undone", "stepId": "project:create"})
        );
        let finished: NextStep = serde_json::from_value(json!({"outcome": "finished"})).unwrap();
        assert_eq!(finished, NextStep::Finished);
    }
}
