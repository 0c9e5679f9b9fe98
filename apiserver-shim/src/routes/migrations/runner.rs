//! The next step of a Migration written with kubectl or synced by a GitOps tool, for
//! berth-controller's leader, which decides when such a task needs work and records each
//! answer in its status (`controller/src/reconcilers/migration`). A `Migration` whose
//! `confirmedDigest` repeats its plan's digest (a plan made by `POST /migrations/plan`, so it is
//! attested) is applied the way `POST /migrations/apply` applies one — the same steps,
//! receipts and idempotent ids — acting as the organization's owner (`auth::internal`);
//! `cleanupConfirmedDigest` asks for cleanup, `confirmDataLoss` allows removing databases and
//! volumes. One step per call, so each receipt is written by one writer as it lands.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use berth_api::migrations::{MigrationPlan, StepFailure};
use berth_crds::migration::Migration;
use berth_migrate::plan::{attestation_matches, check_plan_shape, plan_digest, secret_refs};
use berth_vocabulary::migration_runner::{NEXT_STEP_ROUTE, NextStep, NextStepRequest, Work};
use kube::{Api, ResourceExt};

use super::dispatch::Dispatcher;
use super::secrets::ResolvedSecrets;
use super::{apply, cleanup, key, task};
use crate::auth::internal::Grant;
use crate::auth::runner::require_controller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

/// The internal route (outside `/api`, so not in the OpenAPI document).
pub fn router() -> Router<AppState> {
    Router::new().route(NEXT_STEP_ROUTE, post(next_step))
}

async fn next_step(
    State(state): State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<NextStepRequest>,
) -> ApiResult<Json<NextStep>> {
    require_controller(&state, &headers).await?;
    let migration = read(&state, &namespace, &name, &body.resource_version).await?;
    let plan = match checked_plan(&state, &migration).await {
        Ok(plan) => plan,
        Err(message) => return Ok(Json(plan_refused(message))),
    };
    let organization = state
        .caches
        .organizations
        .find(|o| o.status.as_ref().and_then(|s| s.namespace.as_deref()) == Some(&namespace))
        .ok_or_else(|| ApiError::not_found_message("no organization owns this namespace"))?;
    let grant = Grant::for_migration(&name, &organization.name_any(), &namespace);
    let header = grant.header().parse().map_err(ApiError::internal)?;
    let dispatcher = Dispatcher::new(state.clone(), header);
    let next = match body.work {
        Work::Apply => {
            let references = secret_refs(&plan).into_iter().map(|(_, r)| r);
            let secrets =
                ResolvedSecrets::resolve(&state, &namespace, references, &Default::default()).await;
            apply::next(&dispatcher, &namespace, &migration, &plan, &secrets).await
        }
        Work::Cleanup => {
            let confirm = migration.spec.confirm_data_loss;
            cleanup::next(&dispatcher, &migration, &plan, confirm).await
        }
    };
    Ok(Json(next))
}

/// The task as the controller read it: one changed since (a receipt written meanwhile, a spec
/// edited) is refused, so a step is never run twice from two readings.
async fn read(
    state: &AppState,
    namespace: &str,
    name: &str,
    resource_version: &str,
) -> ApiResult<Migration> {
    let api = Api::<Migration>::namespaced(state.client.clone(), namespace);
    let migration = api
        .get_opt(name)
        .await?
        .ok_or_else(|| ApiError::not_found("migration", name))?;
    if migration.resource_version().as_deref() != Some(resource_version) {
        return Err(ApiError::conflict_code(
            "migration_changed",
            format!("migration {name} changed since it was read; read it again"),
        )
        .retriable());
    }
    if task::applied_over_rest(&migration) {
        return Err(ApiError::conflict_code(
            "migration_applied_over_rest",
            format!("migration {name} was applied over REST; its caller runs it"),
        ));
    }
    Ok(migration)
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

/// Why the task's plan is not run: a failure only a person can fix.
fn plan_refused(message: String) -> NextStep {
    NextStep::Stopped {
        failure: StepFailure {
            step_id: String::new(),
            operation_key: String::new(),
            code: "migration_plan_invalid".into(),
            category: "user".into(),
            message,
            retryable: false,
        },
    }
}
