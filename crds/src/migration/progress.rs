//! What a task's status becomes after a step or a stop, whoever ran it (berth-shim for a task
//! applied over REST, berth-controller for one written with kubectl): one rule for both.

use berth_vocabulary::migrations::{Receipt, StepFailure};
use k8s_openapi::jiff::Timestamp;

use super::{Migration, MigrationStatus};
use crate::condition::{Condition, ConditionStatus, merge};

/// Where a task is (`status.phase`).
pub mod phase {
    pub const APPLYING: &str = "applying";
    pub const APPLIED: &str = "applied";
    pub const FAILED: &str = "failed";
    pub const CLEANING_UP: &str = "cleaning-up";
    pub const CLEANED_UP: &str = "cleaned-up";
}

/// What the task records after a step or a stop.
pub struct Progress<'a> {
    pub phase: &'a str,
    pub receipts: &'a [Receipt],
    pub failure: Option<&'a StepFailure>,
    pub cleaned_step_ids: &'a [String],
}

impl MigrationStatus {
    /// `migration`'s status once `progress` is recorded: receipts, phase, failure (gone when
    /// there is none) and the Ready condition; the last verify is kept.
    pub fn after(migration: &Migration, progress: &Progress<'_>, now: Timestamp) -> Self {
        let current = migration.status.as_ref();
        let mut conditions = current.map(|s| s.conditions.clone()).unwrap_or_default();
        let generation = migration.metadata.generation;
        merge(&mut conditions, ready_condition(progress, generation, now));
        Self {
            phase: Some(progress.phase.to_string()),
            receipts: progress.receipts.to_vec(),
            verify_result: current.and_then(|s| s.verify_result.clone()),
            failure: progress.failure.cloned(),
            cleaned_step_ids: progress.cleaned_step_ids.to_vec(),
            observed_generation: generation,
            conditions,
        }
    }
}

fn ready_condition(progress: &Progress<'_>, generation: Option<i64>, now: Timestamp) -> Condition {
    let (status, reason, message) = match (progress.phase, progress.failure) {
        (_, Some(failure)) => (
            ConditionStatus::False,
            "StepFailed",
            format!(
                "step {} stopped: {} ({})",
                failure.step_id, failure.message, failure.code
            ),
        ),
        (phase::APPLIED, None) => (
            ConditionStatus::True,
            "Applied",
            format!("all {} steps completed", progress.receipts.len()),
        ),
        (phase::CLEANED_UP, None) => (
            ConditionStatus::False,
            "CleanedUp",
            "what the migration created was removed".to_string(),
        ),
        (phase, None) => (
            ConditionStatus::False,
            "InProgress",
            format!("{phase}: {} steps completed", progress.receipts.len()),
        ),
    };
    Condition::new("Ready", status, reason, message, generation, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn migration() -> Migration {
        let digest = format!("sha256:{}", "a".repeat(64));
        let plan = json!({
            "protocol": "platform-migration/v1", "state": "ready", "bundleDigest": digest,
            "planDigest": digest, "steps": [], "blockers": [], "warnings": [],
        });
        let migration: Migration = serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Migration",
            "metadata": {"name": "mig-a", "generation": 3},
            "spec": {"plan": plan, "digest": digest},
            "status": {"phase": "failed", "receipts": [], "conditions": [], "failure": {
                "stepId": "project:create", "operationKey": "projects.create",
                "code": "timeout", "category": "infra", "message": "slow", "retryable": true,
            }},
        }))
        .unwrap();
        migration
    }

    #[test]
    fn a_step_done_after_a_failure_clears_it_and_says_where_the_task_is() {
        let migration = migration();
        let progress = Progress {
            phase: phase::APPLIED,
            receipts: &[],
            failure: None,
            cleaned_step_ids: &[],
        };
        let status = MigrationStatus::after(&migration, &progress, Timestamp::now());
        assert_eq!(status.failure, None);
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.conditions[0].reason, "Applied");
        assert_eq!(status.conditions[0].status, ConditionStatus::True);
    }
}
