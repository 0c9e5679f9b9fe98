//! Migration written with kubectl or synced by a GitOps tool: the leader runs it a step at a
//! time. Each reconcile decides what the task needs (`decide`), asks berth-shim to run the
//! next step (`migration_steps`: the steps are ordinary REST operations, run there as the organization's
//! owner) and records the answer in the status, written only if the task is still at the
//! version the step was run from; the write's watch event brings the next step. Tasks applied
//! over REST are their caller's to run (berth-shim).

pub mod decide;

use std::sync::Arc;
use std::time::Instant;

use berth_crds::migration::Migration;
use berth_vocabulary::migration_runner::NextStep;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, ResourceExt};

use super::policy::{drain, error_policy};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::migration_steps::RETRY_AFTER;
use crate::status::StatusWriter;

const KIND: &str = "Migration";

pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<Migration>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(migration: Arc<Migration>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let Some(work) = decide::wanted(&migration) else {
        return Ok(Action::await_change());
    };
    let runner = &context.migrations;
    if decide::awaits_retry(&migration)
        && let Some(wait) = runner.retry_wait(&migration, Instant::now())
    {
        return Ok(Action::requeue(wait));
    }
    let Some(next) = runner.next_step(&context.client, &migration, work).await? else {
        return Ok(Action::await_change());
    };
    let retry_later = matches!(&next, NextStep::Stopped { failure } if failure.retryable);
    runner.note_outcome(&migration, retry_later, Instant::now());
    log(&migration, &next);
    let status = decide::status_after(&migration, work, &next, Timestamp::now());
    let namespace = migration
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Migration>::namespaced(context.client.clone(), &namespace);
    let written = StatusWriter::new(&api, migration.as_ref())
        .if_unchanged()
        .apply(migration.status.as_ref(), &status)
        .await;
    match written {
        // Changed meanwhile: its watch event brings a fresh reconcile, and the step, run again
        // from the new version, finds what it did (its ids are derived, not random).
        Err(error) if error.is_conflict() => Ok(Action::await_change()),
        Err(error) => Err(error),
        Ok(_) if retry_later => Ok(Action::requeue(RETRY_AFTER)),
        Ok(_) => Ok(Action::await_change()),
    }
}

fn log(migration: &Migration, next: &NextStep) {
    let name = migration.name_any();
    match next {
        NextStep::Applied { receipt } => {
            tracing::info!(migration = %name, step = %receipt.step_id, "migration step applied");
        }
        NextStep::Undone { step_id } => {
            tracing::info!(migration = %name, step = %step_id, "migration step undone");
        }
        NextStep::Stopped { failure } => {
            tracing::warn!(migration = %name, step = %failure.step_id, code = %failure.code,
                retryable = failure.retryable, "migration step failed");
        }
        NextStep::Finished => tracing::info!(migration = %name, "migration run finished"),
    }
}
