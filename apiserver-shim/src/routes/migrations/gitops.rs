//! Migrations written with kubectl or synced by a GitOps tool: a `Migration` whose
//! `confirmedDigest` repeats its plan's digest (a plan made by `POST /migrations/plan`, so it
//! is attested) is applied the way `POST /migrations/apply` applies one — the same steps,
//! receipts and idempotent ids — acting as the organization's owner (`auth::internal`).
//! `cleanupConfirmedDigest` asks for cleanup; `confirmDataLoss` allows removing databases and
//! volumes. A failure a retry can fix is retried; one that needs a person stays on the object
//! (`Ready=False StepFailed`) until its spec changes (e.g. a new `retry` value).

use std::time::Duration;

use berth_api::migrations::{MigrationPlan, StepFailure};
use berth_crds::migration::Migration;
use berth_migrate::plan::{attestation_matches, check_plan_shape, plan_digest, secret_refs};
use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

use super::dispatch::Dispatcher;
use super::run_lease::{self, RunGuard, RunLease};
use super::secrets::ResolvedSecrets;
use super::task::{self, Progress, phase};
use super::{apply, cleanup, key};
use crate::auth::internal::Grant;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// How long a failure a retry can fix waits before the task runs again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// What a task asks for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    Apply,
    Cleanup,
}

/// What to do with `migration`, decided from the object alone.
pub fn wanted(migration: &Migration) -> Option<Work> {
    let annotations = migration.annotations();
    if annotations.get(task::RUNNER_ANNOTATION).map(String::as_str) == Some(task::RUNNER_API)
        || migration.metadata.deletion_timestamp.is_some()
    {
        return None;
    }
    let spec = &migration.spec;
    let status = migration.status.clone().unwrap_or_default();
    let waiting_for_person =
        status.failure.is_some() && status.observed_generation == migration.metadata.generation;
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

/// Watches every Migration and runs those that ask for work.
pub async fn run(state: AppState) {
    let api = Api::<Migration>::all(state.client.clone());
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(migration) => {
                if let Some(work) = wanted(&migration) {
                    tokio::spawn(execute(state.clone(), migration, work));
                }
            }
            Err(error) => tracing::warn!(%error, "watching migrations"),
        }
    }
}

/// Runs `migration` here unless this process or another replica runs it: the Lease decides
/// across replicas. A failure a retry can fix is run again after [`RETRY_AFTER`]; a Lease held
/// elsewhere is looked at again once it could have expired (its holder may have died).
async fn execute(state: AppState, migration: Migration, work: Work) {
    let name = migration.name_any();
    let (_guard, mut migration, work) = match RunGuard::take(&name) {
        Ok(guard) => (guard, migration, work),
        // This shim runs it already: work asked for meanwhile (a cleanup confirmed while the
        // apply ends) waits its turn instead of being lost.
        Err(_) => match after_the_run_here(&state, &migration).await {
            Some(turn) => turn,
            None => return,
        },
    };
    let mut retrying = false;
    loop {
        let pause = match RunLease::take(&state, &migration).await {
            Ok((lease, fresh)) if due(&fresh, work, retrying) => {
                let outcome = run_once(&state, &fresh, work).await;
                lease.release().await;
                match outcome {
                    Ok(Some(failure)) if failure.retryable => {
                        tracing::info!(migration = %name, step = %failure.step_id,
                            "retrying a migration step later");
                        retrying = true;
                        RETRY_AFTER
                    }
                    Ok(_) => return,
                    Err(error) => {
                        tracing::warn!(migration = %name, error = %error.body.message,
                            "migration not run");
                        return;
                    }
                }
            }
            // Another replica ran it meanwhile: nothing is left to do.
            Ok((lease, _)) => return lease.release().await,
            Err(_) => Duration::from_secs(run_lease::LEASE_SECONDS + 1),
        };
        tokio::time::sleep(pause).await;
        match reread(&state, &migration).await {
            Some(fresh) => migration = fresh,
            None => return,
        }
    }
}

/// Waits until the run of `migration` under way in this process ends, then takes its turn
/// with the task read afresh and what it asks for now. One task waits at most (a second has
/// nothing to add: the first reads the newest spec); `None` when it need not wait or nothing
/// is left to do.
async fn after_the_run_here(
    state: &AppState,
    migration: &Migration,
) -> Option<(RunGuard, Migration, Work)> {
    let name = migration.name_any();
    let queued = RunGuard::take(&format!("{name}#waiting")).ok()?;
    let guard = loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Ok(guard) = RunGuard::take(&name) {
            break guard;
        }
    };
    // Free the queue before reading: a change that lands after the read queues behind this
    // turn and reads again. Held through the read, such a change found the queue taken and was
    // dropped while this turn saw nothing to do (a cleanup asked right after an apply was lost).
    drop(queued);
    let fresh = reread(state, migration).await?;
    let work = wanted(&fresh)?;
    Some((guard, fresh, work))
}

/// Whether the task, as read under its Lease, still asks for `work`; a run of ours that
/// stopped on a failure a retry can fix is due again.
fn due(migration: &Migration, work: Work, retrying: bool) -> bool {
    let failure = migration.status.as_ref().and_then(|s| s.failure.as_ref());
    let retry_due = retrying && failure.is_some_and(|f| f.retryable) && !finished(migration, work);
    wanted(migration) == Some(work) || retry_due
}

fn finished(migration: &Migration, work: Work) -> bool {
    let phase = migration.status.as_ref().and_then(|s| s.phase.as_deref());
    match work {
        Work::Apply => phase == Some(phase::APPLIED),
        Work::Cleanup => phase == Some(phase::CLEANED_UP),
    }
}

async fn reread(state: &AppState, migration: &Migration) -> Option<Migration> {
    let namespace = migration.namespace()?;
    let api = Api::<Migration>::namespaced(state.client.clone(), &namespace);
    api.get_opt(&migration.name_any()).await.ok().flatten()
}

/// Runs the task once; answers the failure it stopped on, if any.
async fn run_once(
    state: &AppState,
    migration: &Migration,
    work: Work,
) -> ApiResult<Option<StepFailure>> {
    let namespace = migration.namespace().unwrap_or_default();
    let plan = match checked_plan(state, migration).await {
        Ok(plan) => plan,
        Err(refusal) => {
            refuse(state, &namespace, migration, refusal).await?;
            return Ok(None);
        }
    };
    let organization = state
        .caches
        .organizations
        .find(|o| o.status.as_ref().and_then(|s| s.namespace.as_deref()) == Some(&namespace))
        .ok_or_else(|| ApiError::not_found_message("no organization owns this namespace"))?;
    let grant = Grant::for_migration(&migration.name_any(), &organization.name_any(), &namespace);
    let header = grant.header().parse().map_err(ApiError::internal)?;
    let dispatcher = Dispatcher::new(state.clone(), header);
    match work {
        Work::Apply => {
            let references = secret_refs(&plan).into_iter().map(|(_, r)| r);
            let secrets =
                ResolvedSecrets::resolve(state, &namespace, references, &Default::default()).await;
            let result = apply::run(&dispatcher, &namespace, migration, &plan, &secrets).await?;
            Ok(result.failure)
        }
        Work::Cleanup => {
            let confirm = migration.spec.confirm_data_loss;
            let result = cleanup::run(&dispatcher, &namespace, migration, &plan, confirm).await?;
            Ok(result.failure)
        }
    }
}

/// The spec's plan, if it is whole, its digest is its own and this Berth made it.
async fn checked_plan(state: &AppState, migration: &Migration) -> Result<MigrationPlan, String> {
    let plan = migration.spec.plan.clone();
    check_plan_shape(&plan).map_err(|e| e.message)?;
    if plan_digest(&plan) != plan.plan_digest || plan.plan_digest != migration.spec.digest {
        return Err("spec.digest is not the digest of spec.plan".into());
    }
    let key = key::attestation_key(state)
        .await
        .map_err(|e| e.body.message)?;
    if !attestation_matches(key, &plan) {
        return Err(
            "spec.plan was not made by this Berth or was changed after it was made: make it \
             with `berth migrate plan` (or POST /migrations/plan)"
                .into(),
        );
    }
    Ok(plan)
}

/// Records why the task's plan is not run.
async fn refuse(
    state: &AppState,
    namespace: &str,
    migration: &Migration,
    message: String,
) -> ApiResult<()> {
    let failure = StepFailure {
        step_id: String::new(),
        operation_key: String::new(),
        code: "migration_plan_invalid".into(),
        category: "user".into(),
        message,
        retryable: false,
    };
    let progress = Progress {
        phase: phase::FAILED,
        receipts: &task::receipts(migration),
        failure: Some(&failure),
        cleaned_step_ids: &task::cleaned(migration),
    };
    task::record(state, namespace, migration, progress).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_api::migrations::{PROTOCOL, PlanState};
    use berth_crds::migration::{MigrationSpec, MigrationStatus};
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
            .insert(task::RUNNER_ANNOTATION.into(), task::RUNNER_API.into());
        assert_eq!(wanted(&m), None);
    }

    #[test]
    fn a_failure_waits_for_a_change_of_spec() {
        let mut m = migration(Some("failed"), true);
        let failure = json!({
            "stepId": "project:create", "operationKey": "projects.create", "code": "forbidden",
            "category": "user", "message": "not allowed", "retryable": false,
        });
        m.status.as_mut().unwrap().failure = serde_json::from_value(failure).unwrap();
        assert_eq!(wanted(&m), None);
        m.metadata.generation = Some(2);
        assert_eq!(wanted(&m), Some(Work::Apply), "spec.retry changed");
    }

    #[test]
    fn cleanup_is_asked_by_repeating_the_digest() {
        let mut m = migration(Some("applied"), true);
        m.spec.cleanup_confirmed_digest = Some(m.spec.digest.clone());
        assert_eq!(wanted(&m), Some(Work::Cleanup));
        m.status.as_mut().unwrap().phase = Some("cleaned-up".into());
        assert_eq!(wanted(&m), None);
    }
}
