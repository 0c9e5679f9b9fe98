//! Spec §4.9, platform migration: `POST /migrations/plan|apply|status|verify|cleanup` with
//! Appaloft's bodies and answers (`platform-migration/v1`), and
//! `POST /deployments/{deploymentId}/cleanup-runtime`. Planning is `berth-migrate`'s (pure);
//! here the plan is attested, applied as a `Migration` task of ordinary operations run as the
//! caller, read back, verified and cleaned up.

mod apply;
mod apply_run;
mod apply_stream;
mod cleanup;
mod cleanup_runtime;
mod dependencies;
mod dispatch;
mod key;
mod operations;
mod readback;
mod run_lease;
pub mod runner;
mod secrets;
mod task;

use axum::extract::State;
use axum::http::{HeaderMap, header};
use berth_api::migrations::{
    ApplyRequest, ApplyResult, CleanupRequest, CleanupResult, MigrationPlan, PROTOCOL, PlanRequest,
    ReadbackRequest, StatusResult, VerificationResult,
};
use berth_crds::member::OrganizationRole;
use berth_crds::migration::Migration;
use berth_migrate::plan::{
    attest, attestation_matches, check_plan_shape, check_receipts, parse_bundle, plan, plan_digest,
};

use self::apply::Unheard;
use self::apply_run::ApplyRun;
use self::dispatch::Dispatcher;
use self::readback::{ATTENTION, PASSED, read};
use self::run_lease::{RunGuard, RunLease};
use super::Endpoint;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<PlanRequest, MigrationPlan, _, _>(
            "/migrations/plan",
            "Plan a migration (member): a neutral bundle, or a platform's export files \
             (source: railway, heroku or compose) → the steps, blockers, warnings, a report of \
             every variable and the digest to confirm. Changes nothing",
            plan_migration,
        ),
        Endpoint::post::<ApplyRequest, ApplyResult, _, _>(
            "/migrations/apply",
            "Apply a plan or resume it (member; confirmedPlanDigest = the plan's digest): its \
             steps run as the caller, each recorded as a receipt in the Migration task; a step \
             that fails stops the run (200, state partial or failed)",
            apply_migration,
        ),
        Endpoint::post::<ReadbackRequest, StatusResult, _, _>(
            "/migrations/status",
            "Where a migration is (member): completed and pending steps and a read of each \
             object",
            migration_status,
        ),
        Endpoint::post::<ReadbackRequest, VerificationResult, _, _>(
            "/migrations/verify",
            "Verify a migration (member): live health, deployment outcome, domain routes and \
             certificates, migrated variables present; passed, attention or incomplete",
            verify_migration,
        ),
        Endpoint::post::<CleanupRequest, CleanupResult, _, _>(
            "/migrations/cleanup",
            "Undo what a migration created (owner; confirmedPlanDigest again): created objects \
             only, newest first; reused ones are kept; a second call continues",
            cleanup_migration,
        ),
        apply_stream::endpoint(),
        cleanup_runtime::endpoint(),
    ]
}

async fn plan_migration(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<PlanRequest>,
) -> ApiResult<Json<MigrationPlan>> {
    caller.require_role(OrganizationRole::Member)?;
    let bundle = match (body.bundle, body.source) {
        (Some(bundle), None) => parse_bundle(&bundle)?,
        (None, Some(source)) => berth_migrate::adapters::translate(&source)?,
        _ => {
            return Err(ApiError::validation(
                "bundle",
                "send exactly one of bundle (a neutral MigrationBundle) and source \
                 (provider and files)",
            ));
        }
    };
    let mut planned = plan(bundle)?;
    let key = key::attestation_key(&state).await?;
    planned.attestation = Some(attest(key, &planned.plan_digest));
    Ok(Json(planned))
}

/// A plan sent back for apply or cleanup: well-formed, its digest the one computed from it and
/// the one confirmed, and made by this Berth (attested), not edited since.
async fn check_confirmed(state: &AppState, plan: &MigrationPlan, confirmed: &str) -> ApiResult<()> {
    check_plan_shape(plan)?;
    let phase = ("phase", "migration-plan-confirmation");
    if plan_digest(plan) != plan.plan_digest {
        return Err(ApiError::validation_code(
            "migration_plan_digest_mismatch",
            "plan.planDigest",
            "plan.planDigest is not the digest of the plan: it was changed after planning",
        )
        .with_detail(phase.0, phase.1));
    }
    if confirmed != plan.plan_digest {
        return Err(ApiError::validation_code(
            "migration_plan_digest_mismatch",
            "confirmedPlanDigest",
            "confirmedPlanDigest must repeat the plan's planDigest",
        )
        .with_detail(phase.0, phase.1));
    }
    let key = key::attestation_key(state).await?;
    if !attestation_matches(key, plan) {
        return Err(ApiError::validation_code(
            "migration_plan_not_attested",
            "plan.attestation",
            "the plan was not made by this Berth or was changed after it was made; plan again",
        )
        .with_detail(phase.0, phase.1));
    }
    Ok(())
}

fn authorization(headers: &HeaderMap) -> ApiResult<axum::http::HeaderValue> {
    headers
        .get(header::AUTHORIZATION)
        .cloned()
        .ok_or_else(|| ApiError::unauthenticated("send Authorization: Bearer <token>"))
}

fn namespace(caller: &Caller) -> ApiResult<String> {
    Ok(caller.organization()?.namespace.clone())
}

async fn apply_migration(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ApplyRequest>,
) -> ApiResult<Json<ApplyResult>> {
    let run = ApplyRun::prepare(&state, &caller, &headers, body).await?;
    Ok(Json(run.finish(&mut Unheard).await?))
}

/// The task of a plan a client reads back, with the receipts it claims checked against it:
/// the answer is about those receipts (a prefix of the task's), as Appaloft's is.
async fn readback_task(
    state: &AppState,
    caller: &Caller,
    body: &ReadbackRequest,
) -> ApiResult<(String, Migration)> {
    caller.require_role(OrganizationRole::Member)?;
    check_plan_shape(&body.plan)?;
    if body.receipts.is_empty() {
        return Err(ApiError::bad_request_field(
            "receipts",
            "receipts is empty: send the receipts apply answered (at least one)",
        )
        .with_detail("phase", "migration-readback-validation"));
    }
    check_receipts(&body.plan, &body.receipts)?;
    let namespace = namespace(caller)?;
    let migration = task::find(state, &namespace, &body.plan)
        .await?
        .ok_or_else(|| {
            ApiError::not_found_message(format!(
                "no migration of plan {} was applied in this organization",
                body.plan.plan_digest
            ))
        })?;
    let stored = task::receipts(&migration);
    task::check_claimed("receipts", Some(&stored), &body.receipts)?;
    Ok((namespace, migration))
}

async fn migration_status(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ReadbackRequest>,
) -> ApiResult<Json<StatusResult>> {
    readback_task(&state, &caller, &body).await?;
    let receipts = &body.receipts;
    let dispatcher = Dispatcher::new(state.clone(), authorization(&headers)?);
    let mut evidence = Vec::new();
    for index in 0..receipts.len() {
        let findings = read(&dispatcher, &body.plan, receipts, index, false).await;
        evidence.extend(findings.into_iter().map(|f| f.evidence));
    }
    let completed: Vec<String> = receipts.iter().map(|r| r.step_id.clone()).collect();
    let pending: Vec<String> = body
        .plan
        .steps
        .iter()
        .skip(receipts.len())
        .map(|s| s.id.clone())
        .collect();
    let state_name = if evidence.iter().any(|e| e.state == "unavailable") {
        "unavailable"
    } else if pending.is_empty() {
        "complete"
    } else {
        "partial"
    };
    Ok(Json(StatusResult {
        protocol: PROTOCOL.into(),
        plan_digest: body.plan.plan_digest.clone(),
        state: state_name.into(),
        completed_step_ids: completed,
        pending_step_ids: pending,
        evidence,
    }))
}

async fn verify_migration(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ReadbackRequest>,
) -> ApiResult<Json<VerificationResult>> {
    readback_task(&state, &caller, &body).await?;
    let receipts = &body.receipts;
    let dispatcher = Dispatcher::new(state.clone(), authorization(&headers)?);
    let mut findings = Vec::new();
    for index in 0..receipts.len() {
        findings.extend(read(&dispatcher, &body.plan, receipts, index, true).await);
    }
    let pending = receipts.len() < body.plan.steps.len();
    let verdict = if findings.is_empty()
        || pending
        || findings
            .iter()
            .any(|f| f.settling || f.evidence.state == "unavailable")
    {
        "incomplete"
    } else if findings.iter().any(|f| f.evidence.evaluation == ATTENTION) {
        "attention"
    } else {
        PASSED
    };
    Ok(Json(VerificationResult {
        protocol: PROTOCOL.into(),
        plan_digest: body.plan.plan_digest.clone(),
        state: verdict.into(),
        evidence: findings.into_iter().map(|f| f.evidence).collect(),
    }))
}

async fn cleanup_migration(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CleanupRequest>,
) -> ApiResult<Json<CleanupResult>> {
    check_confirmed(&state, &body.plan, &body.confirmed_plan_digest)
        .await
        .map_err(|e| e.with_detail("phase", "migration-cleanup-confirmation"))?;
    caller.require_role(OrganizationRole::Owner)?;
    check_receipts(&body.plan, &body.receipts)?;
    let namespace = namespace(&caller)?;
    let migration = task::find(&state, &namespace, &body.plan)
        .await?
        .ok_or_else(|| ApiError::not_found_message("no migration of this plan was applied here"))?;
    task::check_applied_over_rest(&migration)?;
    let stored = task::receipts(&migration);
    task::check_claimed("receipts", Some(&stored), &body.receipts)?;
    let _guard = RunGuard::take(&migration_name(&migration))?;
    let (lease, migration) = RunLease::take(&state, &migration).await?;
    let dispatcher = Dispatcher::new(state.clone(), authorization(&headers)?);
    let result = cleanup::run(
        &dispatcher,
        &namespace,
        &migration,
        &body.plan,
        body.confirm_data_loss,
    )
    .await;
    lease.release().await;
    Ok(Json(result?))
}

fn migration_name(migration: &Migration) -> String {
    kube::ResourceExt::name_any(migration)
}
