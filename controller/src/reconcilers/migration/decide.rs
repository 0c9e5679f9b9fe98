//! What a Migration written with kubectl needs now, and what its status becomes once the shim
//! answered a step: decided from the object and the answer alone (no I/O).

use berth_crds::migration::{Migration, MigrationStatus, Progress, phase};
use berth_vocabulary::migration_runner::{NextStep, RUNNER_ANNOTATION, RUNNER_API, Work};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

/// What to do with `migration`: nothing (`None`), or the next step of applying or cleaning up.
/// A failure only a person can fix waits for a change of the spec (a new `retry` value, a
/// `confirmDataLoss`); one a retry can fix is due again (the caller spaces the retries).
pub fn wanted(migration: &Migration) -> Option<Work> {
    let applied_over_rest = migration
        .annotations()
        .get(RUNNER_ANNOTATION)
        .map(String::as_str)
        == Some(RUNNER_API);
    if applied_over_rest || migration.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let spec = &migration.spec;
    let status = migration.status.clone().unwrap_or_default();
    let waiting_for_person = status.failure.as_ref().is_some_and(|f| !f.retryable)
        && status.observed_generation == migration.metadata.generation;
    if waiting_for_person {
        return None;
    }
    let phase = status.phase.as_deref();
    if spec.cleanup_confirmed_digest.as_ref() == Some(&spec.digest) {
        return (phase != Some(phase::CLEANED_UP)).then_some(Work::Cleanup);
    }
    let applying = matches!(phase, None | Some(phase::APPLYING) | Some(phase::FAILED));
    (spec.confirmed_digest.as_ref() == Some(&spec.digest) && applying).then_some(Work::Apply)
}

/// Whether `migration` stopped on a failure a retry can fix (its retries are spaced).
pub fn awaits_retry(migration: &Migration) -> bool {
    let failure = migration.status.as_ref().and_then(|s| s.failure.as_ref());
    failure.is_some_and(|f| f.retryable)
}

/// The status recording `next`, the answer to a step of `work`.
pub fn status_after(
    migration: &Migration,
    work: Work,
    next: &NextStep,
    now: Timestamp,
) -> MigrationStatus {
    let current = migration.status.clone().unwrap_or_default();
    let mut receipts = current.receipts;
    let mut cleaned = current.cleaned_step_ids;
    let mut failure = None;
    let phase = match (work, next) {
        (Work::Apply, NextStep::Applied { receipt }) => {
            receipts.push(receipt.clone());
            phase::APPLYING
        }
        (Work::Apply, NextStep::Finished) => phase::APPLIED,
        (Work::Apply, NextStep::Stopped { failure: stopped }) => {
            failure = Some(stopped.clone());
            phase::FAILED
        }
        (Work::Cleanup, NextStep::Undone { step_id }) => {
            cleaned.push(step_id.clone());
            phase::CLEANING_UP
        }
        (Work::Cleanup, NextStep::Finished) => phase::CLEANED_UP,
        (Work::Cleanup, NextStep::Stopped { failure: stopped }) => {
            failure = Some(stopped.clone());
            phase::CLEANING_UP
        }
        // An answer of the other kind of work (the task changed meanwhile) records nothing.
        (Work::Apply, NextStep::Undone { .. }) | (Work::Cleanup, NextStep::Applied { .. }) => {
            return migration.status.clone().unwrap_or_default();
        }
    };
    let progress = Progress {
        phase,
        receipts: &receipts,
        failure: failure.as_ref(),
        cleaned_step_ids: &cleaned,
    };
    MigrationStatus::after(migration, &progress, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::migration::MigrationSpec;
    use berth_vocabulary::migrations::{MigrationPlan, PROTOCOL, PlanState, Receipt, StepFailure};
    use serde_json::json;

    fn migration(phase: Option<&str>, confirmed: bool) -> Migration {
        let digest = format!("sha256:{}", "a".repeat(64));
        let mut m = Migration::new(
            "mig-a",
            MigrationSpec {
                protocol: Default::default(),
                plan: MigrationPlan {
                    protocol: PROTOCOL.into(),
                    state: PlanState::Ready,
                    bundle_digest: digest.clone(),
                    plan_digest: digest.clone(),
                    steps: Vec::new(),
                    blockers: Vec::new(),
                    warnings: Vec::new(),
                    variable_report: Vec::new(),
                    attestation: None,
                },
                digest: digest.clone(),
                confirmed_digest: confirmed.then(|| digest.clone()),
                cleanup_confirmed_digest: None,
                confirm_data_loss: false,
                retry: None,
            },
        );
        m.metadata.generation = Some(1);
        m.status = Some(MigrationStatus {
            phase: phase.map(str::to_string),
            observed_generation: Some(1),
            ..Default::default()
        });
        m
    }

    fn failure(retryable: bool) -> StepFailure {
        serde_json::from_value(json!({
            "stepId": "project:create", "operationKey": "projects.create", "code": "forbidden",
            "category": "user", "message": "not allowed", "retryable": retryable,
        }))
        .unwrap()
    }

    fn receipt(step: &str) -> Receipt {
        serde_json::from_value(json!({
            "stepId": step, "operationKey": "projects.create", "state": "completed",
            "output": {"projectId": "prj-a"}, "ownership": "created",
        }))
        .unwrap()
    }

    #[test]
    fn a_confirmed_task_is_applied_until_it_is_done() {
        assert_eq!(wanted(&migration(None, true)), Some(Work::Apply));
        assert_eq!(
            wanted(&migration(Some("applying"), true)),
            Some(Work::Apply)
        );
        assert_eq!(wanted(&migration(Some("applied"), true)), None);
        assert_eq!(wanted(&migration(None, false)), None, "not confirmed");
    }

    #[test]
    fn tasks_applied_over_rest_are_left_to_their_caller() {
        let mut m = migration(None, true);
        m.annotations_mut()
            .insert(RUNNER_ANNOTATION.into(), RUNNER_API.into());
        assert_eq!(wanted(&m), None);
    }

    #[test]
    fn a_failure_a_person_must_fix_waits_for_a_change_of_spec() {
        let mut m = migration(Some("failed"), true);
        m.status.as_mut().unwrap().failure = Some(failure(false));
        assert_eq!(wanted(&m), None);
        m.metadata.generation = Some(2);
        assert_eq!(wanted(&m), Some(Work::Apply), "spec.retry changed");
    }

    #[test]
    fn a_failure_a_retry_can_fix_is_retried() {
        let mut m = migration(Some("failed"), true);
        m.status.as_mut().unwrap().failure = Some(failure(true));
        assert_eq!(wanted(&m), Some(Work::Apply));
        assert!(awaits_retry(&m));
    }

    #[test]
    fn cleanup_is_asked_by_repeating_the_digest() {
        let mut m = migration(Some("applied"), true);
        m.spec.cleanup_confirmed_digest = Some(m.spec.digest.clone());
        assert_eq!(wanted(&m), Some(Work::Cleanup));
        m.status.as_mut().unwrap().phase = Some("cleaned-up".into());
        assert_eq!(wanted(&m), None);
    }

    #[test]
    fn each_answer_moves_the_task_on() {
        let now = Timestamp::now();
        let mut m = migration(Some("failed"), true);
        m.status.as_mut().unwrap().failure = Some(failure(true));
        let applied = NextStep::Applied {
            receipt: receipt("project:create"),
        };
        let status = status_after(&m, Work::Apply, &applied, now);
        assert_eq!(status.phase.as_deref(), Some("applying"));
        assert_eq!(status.receipts.len(), 1);
        assert_eq!(status.failure, None, "the failure is over");

        m.status = Some(status);
        let done = status_after(&m, Work::Apply, &NextStep::Finished, now);
        assert_eq!(done.phase.as_deref(), Some("applied"));
        assert_eq!(done.receipts.len(), 1);

        m.status = Some(done);
        let undone = NextStep::Undone {
            step_id: "project:create".into(),
        };
        let cleaning = status_after(&m, Work::Cleanup, &undone, now);
        assert_eq!(cleaning.phase.as_deref(), Some("cleaning-up"));
        assert_eq!(cleaning.cleaned_step_ids, ["project:create"]);
        let stopped = NextStep::Stopped {
            failure: failure(false),
        };
        let failed = status_after(&m, Work::Apply, &stopped, now);
        assert_eq!(failed.phase.as_deref(), Some("failed"));
        assert_eq!(failed.conditions[0].reason, "StepFailed");
    }
}
