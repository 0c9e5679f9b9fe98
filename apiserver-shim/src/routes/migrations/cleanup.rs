//! Cleanup: undoes what apply created — only `created` receipts, newest first, through the
//! ordinary delete and archive operations as the caller (an owner). Progress is kept in the
//! task, so a second call continues instead of repeating; an object already gone counts as
//! undone. A database resource or a storage volume is only removed with `confirmDataLoss`.

use axum::http::Method;
use berth_api::migrations::{
    CleanupAction, CleanupResult, MigrationPlan, PROTOCOL, Receipt, Step, StepFailure,
};
use berth_crds::migration::Migration;
use berth_migrate::plan::{cleanup_order, resolve_input};
use berth_vocabulary::migration_runner::NextStep;
use serde_json::{Map, Value};

use super::apply::REUSED;
use super::dispatch::{Dispatcher, Refusal};
use super::operations::{Call, Undo, cleanup_calls};
use super::task::{self, Progress, phase};
use crate::error::ApiResult;

/// Why a step was not undone.
const DATA_LOSS_UNCONFIRMED: &str = "migration_cleanup_data_loss_unconfirmed";

pub async fn run(
    dispatcher: &Dispatcher,
    namespace: &str,
    migration: &Migration,
    plan: &MigrationPlan,
    confirm_data_loss: bool,
) -> ApiResult<CleanupResult> {
    let receipts = task::receipts(migration);
    let mut cleaned = task::cleaned(migration);
    let mut actions = Vec::new();
    let order: Vec<usize> = cleanup_order(plan, &receipts)
        .into_iter()
        .filter(|i| !cleaned.contains(&receipts[*i].step_id))
        .collect();
    for (position, index) in order.iter().enumerate() {
        let receipt = &receipts[*index];
        let Some(step) = plan.steps.iter().find(|s| s.id == receipt.step_id) else {
            continue;
        };
        match undo_step(dispatcher, step, &receipts, *index, confirm_data_loss).await {
            Ok(done) => {
                actions.extend(done);
                cleaned.push(step.id.clone());
                let progress = progress(phase::CLEANING_UP, &receipts, None, &cleaned);
                task::record(dispatcher.state(), namespace, migration, progress).await?;
            }
            Err(failure) => {
                let progress = progress(phase::CLEANING_UP, &receipts, Some(&failure), &cleaned);
                task::record(dispatcher.state(), namespace, migration, progress).await?;
                let remaining = order[position..]
                    .iter()
                    .map(|i| receipts[*i].step_id.clone())
                    .collect();
                let state = stopped_state(&cleaned);
                let mut answer = result(plan, &receipts, actions, remaining, Some(*failure));
                answer.state = state.into();
                return Ok(answer);
            }
        }
    }
    let progress = progress(phase::CLEANED_UP, &receipts, None, &cleaned);
    task::record(dispatcher.state(), namespace, migration, progress).await?;
    Ok(result(plan, &receipts, actions, Vec::new(), None))
}

/// Undoes the newest created step not undone yet (for berth-controller, which records it).
pub async fn next(
    dispatcher: &Dispatcher,
    migration: &Migration,
    plan: &MigrationPlan,
    confirm_data_loss: bool,
) -> NextStep {
    let receipts = task::receipts(migration);
    let cleaned = task::cleaned(migration);
    let next = cleanup_order(plan, &receipts)
        .into_iter()
        .find(|i| !cleaned.contains(&receipts[*i].step_id));
    let Some(index) = next else {
        return NextStep::Finished;
    };
    let step_id = receipts[index].step_id.clone();
    let Some(step) = plan.steps.iter().find(|s| s.id == step_id) else {
        return NextStep::Undone { step_id };
    };
    match undo_step(dispatcher, step, &receipts, index, confirm_data_loss).await {
        Ok(_) => NextStep::Undone { step_id },
        Err(failure) => NextStep::Stopped { failure: *failure },
    }
}

fn progress<'a>(
    phase: &'a str,
    receipts: &'a [Receipt],
    failure: Option<&'a StepFailure>,
    cleaned: &'a [String],
) -> Progress<'a> {
    Progress {
        phase,
        receipts,
        failure,
        cleaned_step_ids: cleaned,
    }
}

/// The state of a cleanup that stopped at a step: `partial` once any step was undone, by this
/// call or an earlier one (repeating a cleanup that stopped answers as the first call did).
fn stopped_state(cleaned: &[String]) -> &'static str {
    if cleaned.is_empty() {
        "failed"
    } else {
        "partial"
    }
}

/// The answer; `state` is `completed` without a failure (see [`stopped_state`] for one that
/// stopped).
fn result(
    plan: &MigrationPlan,
    receipts: &[Receipt],
    actions: Vec<CleanupAction>,
    remaining_step_ids: Vec<String>,
    failure: Option<StepFailure>,
) -> CleanupResult {
    CleanupResult {
        protocol: PROTOCOL.into(),
        plan_digest: plan.plan_digest.clone(),
        state: "completed".into(),
        actions,
        skipped_step_ids: receipts
            .iter()
            .filter(|r| r.ownership == REUSED)
            .map(|r| r.step_id.clone())
            .collect(),
        remaining_step_ids,
        failure,
    }
}

/// Runs the calls that undo one step; a 404 means it is gone already.
async fn undo_step(
    dispatcher: &Dispatcher,
    step: &Step,
    receipts: &[Receipt],
    index: usize,
    confirm_data_loss: bool,
) -> Result<Vec<CleanupAction>, Box<StepFailure>> {
    let Some(cleanup) = &step.cleanup else {
        return Ok(Vec::new());
    };
    if holds_data(step) && !confirm_data_loss {
        return Err(failure(
            step,
            DATA_LOSS_UNCONFIRMED,
            format!(
                "{} may hold data written since the migration; repeat cleanup with \
                 confirmDataLoss (berth migrate cleanup --confirm-data-loss) to remove it",
                step.id
            ),
        ));
    }
    let input =
        resolve_input(step, &receipts[..index], &mut |_| Ok(String::new())).unwrap_or_default();
    let output = output_map(&receipts[index]);
    let slug = match cleanup.operation_key.as_str() {
        "resources.delete" => resource_slug(dispatcher, &output).await,
        _ => None,
    };
    let undo = Undo {
        operation_key: &cleanup.operation_key,
        input: &input,
        output: &output,
        cleanup_input: cleanup.input.as_ref(),
        resource_slug: slug,
    };
    let calls = match cleanup_calls(&undo) {
        Ok(calls) => calls,
        // The resource is gone (its slug could not be read): nothing left to delete.
        Err(_) if cleanup.operation_key == "resources.delete" => Vec::new(),
        Err(message) => return Err(failure(step, "validation_error", message)),
    };
    let mut actions = Vec::new();
    for call in calls {
        run_call(dispatcher, step, &call).await?;
        actions.push(CleanupAction {
            step_id: step.id.clone(),
            operation_key: cleanup.operation_key.clone(),
            command_name: call.command_name.into(),
            state: "completed".into(),
        });
    }
    Ok(actions)
}

async fn run_call(
    dispatcher: &Dispatcher,
    step: &Step,
    call: &Call,
) -> Result<(), Box<StepFailure>> {
    match dispatcher
        .call(call.method.clone(), &call.path, call.body.as_ref())
        .await
    {
        Ok(_) => Ok(()),
        Err(refusal) if refusal.is_not_found() => Ok(()),
        Err(refusal) => Err(refused(step, refusal)),
    }
}

/// A storage volume, a provisioned database, or a resource of kind database.
fn holds_data(step: &Step) -> bool {
    step.operation_key == "storage-volumes.create"
        || step.operation_key == "dependency-resources.provision"
        || (step.operation_key == "resources.create"
            && step.input.get("kind").and_then(Value::as_str) == Some("database"))
}

async fn resource_slug(dispatcher: &Dispatcher, output: &Map<String, Value>) -> Option<String> {
    let id = output.get("resourceId")?.as_str()?;
    let shown = dispatcher
        .call(Method::GET, &format!("/resources/{id}"), None)
        .await
        .ok()?;
    shown
        .pointer("/resource/slug")
        .or_else(|| shown.get("slug"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn output_map(receipt: &Receipt) -> Map<String, Value> {
    match serde_json::to_value(&receipt.output) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn failure(step: &Step, code: &str, message: String) -> Box<StepFailure> {
    Box::new(StepFailure {
        step_id: step.id.clone(),
        operation_key: step
            .cleanup
            .as_ref()
            .map(|c| c.operation_key.clone())
            .unwrap_or_default(),
        code: code.into(),
        category: "user".into(),
        message,
        retryable: false,
    })
}

fn refused(step: &Step, refusal: Refusal) -> Box<StepFailure> {
    Box::new(StepFailure {
        code: refusal.code,
        category: refusal.category,
        retryable: refusal.retriable,
        ..*failure(step, "", refusal.message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleanup_stopped_after_earlier_undone_steps_stays_partial() {
        assert_eq!(stopped_state(&[]), "failed", "nothing undone yet");
        let undone_earlier = ["resource:create:web".to_string()];
        assert_eq!(stopped_state(&undone_earlier), "partial");
    }
}
