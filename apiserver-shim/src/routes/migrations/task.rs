//! The `Migration` object that holds an applied plan: the plan as confirmed, the receipts of
//! the steps done so far and cleanup's progress, in the organization's namespace. Receipts a
//! client sends are checked against these, so a forged or edited receipt is refused.

use berth_api::migrations::{MigrationPlan, Receipt};
use berth_crds::migration::{Migration, MigrationProtocol, MigrationSpec, MigrationStatus};
pub use berth_crds::migration::{Progress, phase};
use berth_vocabulary::migration_runner::{RUNNER_ANNOTATION, RUNNER_API};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, FIELD_MANAGER};

/// The object name of the task of a plan: `mig-` and the digest's first 16 hex digits.
pub fn name_of(plan_digest: &str) -> String {
    let hex = plan_digest.trim_start_matches("sha256:");
    format!("mig-{}", &hex[..16.min(hex.len())])
}

fn api(state: &AppState, namespace: &str) -> Api<Migration> {
    Api::namespaced(state.client.clone(), namespace)
}

/// The task of `plan`, if it was ever applied.
pub async fn find(
    state: &AppState,
    namespace: &str,
    plan: &MigrationPlan,
) -> ApiResult<Option<Migration>> {
    Ok(api(state, namespace)
        .get_opt(&name_of(&plan.plan_digest))
        .await?)
}

/// The task of `plan`, written now if this is its first apply.
pub async fn open(state: &AppState, namespace: &str, plan: &MigrationPlan) -> ApiResult<Migration> {
    if let Some(existing) = find(state, namespace, plan).await? {
        return Ok(existing);
    }
    let spec = MigrationSpec {
        protocol: MigrationProtocol::PlatformMigrationV1,
        plan: plan.clone(),
        digest: plan.plan_digest.clone(),
        confirmed_digest: Some(plan.plan_digest.clone()),
        cleanup_confirmed_digest: None,
        confirm_data_loss: false,
        retry: None,
    };
    let mut migration = Migration::new(&name_of(&plan.plan_digest), spec);
    migration
        .annotations_mut()
        .insert(RUNNER_ANNOTATION.into(), RUNNER_API.into());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let name = migration.name_any();
    Ok(api(state, namespace)
        .patch(&name, &params, &Patch::Apply(&migration))
        .await?)
}

/// The receipts the task holds.
pub fn receipts(migration: &Migration) -> Vec<Receipt> {
    let stored = migration.status.as_ref().map(|s| s.receipts.clone());
    stored.unwrap_or_default()
}

/// Steps cleanup already undid.
pub fn cleaned(migration: &Migration) -> Vec<String> {
    migration
        .status
        .as_ref()
        .map(|s| s.cleaned_step_ids.clone())
        .unwrap_or_default()
}

/// `claimed` (what a client sends) must repeat the stored receipts, in order: a receipt the
/// server never issued, or one edited, is refused. Fewer is fine (a response was lost).
pub fn check_claimed(
    field: &str,
    stored: Option<&[Receipt]>,
    claimed: &[Receipt],
) -> ApiResult<()> {
    let stored = stored.unwrap_or_default();
    for (index, receipt) in claimed.iter().enumerate() {
        if stored.get(index) != Some(receipt) {
            return Err(ApiError::validation(
                &format!("{field}[{index}]"),
                format!(
                    "{field}[{index}] (step {}) is not a receipt this Berth issued for the plan",
                    receipt.step_id
                ),
            )
            .with_detail("phase", "migration-receipt-validation")
            .with_detail("receiptIndex", index));
        }
    }
    Ok(())
}

/// Writes the task's status: receipts, phase, failure and the Ready condition.
pub async fn record(
    state: &AppState,
    namespace: &str,
    migration: &Migration,
    progress: Progress<'_>,
) -> ApiResult<()> {
    let status = MigrationStatus::after(migration, &progress, Timestamp::now());
    api(state, namespace)
        .patch_status(
            &migration.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": with_nulls(status)? })),
        )
        .await?;
    Ok(())
}

/// The status as a merge patch: a failure that is over is removed (`null`), not left behind.
fn with_nulls(status: MigrationStatus) -> ApiResult<Value> {
    let mut value = serde_json::to_value(status).map_err(ApiError::internal)?;
    if let Some(map) = value.as_object_mut() {
        map.entry("failure").or_insert(Value::Null);
    }
    Ok(value)
}

/// Whether `migration` was applied over REST (so its caller runs it), not written with
/// kubectl (which berth-controller runs).
pub fn applied_over_rest(migration: &Migration) -> bool {
    migration
        .annotations()
        .get(RUNNER_ANNOTATION)
        .map(String::as_str)
        == Some(RUNNER_API)
}

/// A task written with kubectl is berth-controller's to run: REST neither applies nor cleans
/// it up (the two would write the same receipts).
pub fn check_applied_over_rest(migration: &Migration) -> ApiResult<()> {
    if applied_over_rest(migration) {
        return Ok(());
    }
    Err(ApiError::conflict_code(
        "migration_run_by_controller",
        format!(
            "migration {} was written with kubectl and is run by berth-controller; change its \
             spec (confirmedDigest, cleanupConfirmedDigest) instead",
            migration.name_any()
        ),
    ))
}

/// Deletes a task that was cleaned up, so the plan can be applied afresh.
pub async fn remove(state: &AppState, namespace: &str, migration: &Migration) -> ApiResult<()> {
    api(state, namespace)
        .delete(&migration.name_any(), &Default::default())
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(step: &str, id: &str) -> Receipt {
        serde_json::from_value(json!({
            "stepId": step, "operationKey": "projects.create", "state": "completed",
            "output": {"projectId": id}, "ownership": "created",
        }))
        .unwrap()
    }

    #[test]
    fn claimed_receipts_must_repeat_the_stored_ones() {
        let stored = [receipt("project:create", "prj-a"), receipt("b", "x")];
        assert!(
            check_claimed("r", Some(&stored), &[]).is_ok(),
            "a lost response"
        );
        assert!(check_claimed("r", Some(&stored), &stored[..1]).is_ok());
        let forged = [receipt("project:create", "prj-victim")];
        let error = check_claimed("r", Some(&stored), &forged).unwrap_err();
        assert_eq!(error.body.details["field"], "r[0]");
        assert!(
            check_claimed("r", None, &stored[..1]).is_err(),
            "never issued"
        );
    }

    #[test]
    fn a_task_is_named_by_its_digest() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(name_of(&digest), "mig-abababababababab");
    }
}
