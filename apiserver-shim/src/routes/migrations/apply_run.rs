//! One run of `POST /migrations/apply` (plain or streamed): the request checked, the task
//! opened and its lease taken before anything runs, so a refusal is an ordinary 4xx answer;
//! then the steps, each receipt recorded as it lands, and the lease given up.

use axum::http::HeaderMap;
use berth_api::migrations::{ApplyRequest, ApplyResult, MigrationPlan, PlanState};
use berth_crds::member::OrganizationRole;
use berth_crds::migration::Migration;
use berth_migrate::plan::{check_receipts, secret_refs};
use kube::ResourceExt;

use super::apply::{self, Listener};
use super::dispatch::Dispatcher;
use super::run_lease::{RunGuard, RunLease};
use super::secrets::ResolvedSecrets;
use super::{authorization, check_confirmed, namespace, task};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A run ready to start: the task, held by this process and its lease.
pub struct ApplyRun {
    _guard: RunGuard,
    lease: RunLease,
    namespace: String,
    migration: Migration,
    plan: MigrationPlan,
    secrets: ResolvedSecrets,
    dispatcher: Dispatcher,
}

impl ApplyRun {
    /// Checks the request as the caller, opens the task (again, after a cleanup) and takes it.
    pub async fn prepare(
        state: &AppState,
        caller: &Caller,
        headers: &HeaderMap,
        body: ApplyRequest,
    ) -> ApiResult<Self> {
        caller.require_role(OrganizationRole::Member)?;
        let plan = body.plan;
        check_confirmed(state, &plan, &body.confirmed_plan_digest).await?;
        check_not_blocked(&plan)?;
        check_receipts(&plan, &body.prior_receipts)?;
        let namespace = namespace(caller)?;
        let existing = task::find(state, &namespace, &plan).await?;
        if let Some(existing) = &existing {
            task::check_applied_over_rest(existing)?;
        }
        let stored = existing.as_ref().map(task::receipts);
        task::check_claimed("priorReceipts", stored.as_deref(), &body.prior_receipts)?;
        let guard = RunGuard::take(&task::name_of(&plan.plan_digest))?;
        let migration = restart_if_cleaned(state, &namespace, &plan, existing).await?;
        let (lease, migration) = RunLease::take(state, &migration).await?;
        let references = secret_refs(&plan).into_iter().map(|(_, r)| r);
        let secrets =
            ResolvedSecrets::resolve(state, &namespace, references, &body.secret_values).await;
        Ok(Self {
            _guard: guard,
            lease,
            dispatcher: Dispatcher::new(state.clone(), authorization(headers)?),
            namespace,
            migration,
            plan,
            secrets,
        })
    }

    pub fn migration_name(&self) -> String {
        self.migration.name_any()
    }

    pub fn plan(&self) -> &MigrationPlan {
        &self.plan
    }

    /// Receipts the task held when the run started.
    pub fn completed_before(&self) -> usize {
        task::receipts(&self.migration).len()
    }

    /// Gives the lease up without running a step (the client left at once).
    pub async fn abandon(self) {
        self.lease.release().await;
    }

    /// Runs what is left, telling `listener` of each receipt, and gives the lease up.
    pub async fn finish(self, listener: &mut impl Listener) -> ApiResult<ApplyResult> {
        let result = apply::run(
            &self.dispatcher,
            &self.namespace,
            &self.migration,
            &self.plan,
            &self.secrets,
            listener,
        )
        .await;
        self.lease.release().await;
        result
    }
}

fn check_not_blocked(plan: &MigrationPlan) -> ApiResult<()> {
    if plan.state != PlanState::Blocked && plan.blockers.is_empty() {
        return Ok(());
    }
    Err(ApiError::validation_code(
        "migration_plan_blocked",
        "plan.blockers",
        format!(
            "a blocked plan cannot be applied: {} blocker(s); resolve them and plan again",
            plan.blockers.len()
        ),
    )
    .with_detail("blockerCount", plan.blockers.len()))
}

/// The task to apply into: the existing one, or a new one when there is none or the last was
/// cleaned up (a new task derives new ids, so nothing of the old one is mistaken for its own).
async fn restart_if_cleaned(
    state: &AppState,
    namespace: &str,
    plan: &MigrationPlan,
    existing: Option<Migration>,
) -> ApiResult<Migration> {
    let cleaned_up = existing
        .as_ref()
        .and_then(|m| m.status.as_ref())
        .and_then(|s| s.phase.as_deref())
        == Some(task::phase::CLEANED_UP);
    if let (true, Some(old)) = (cleaned_up, existing.as_ref()) {
        task::remove(state, namespace, old).await?;
    }
    match existing {
        Some(migration) if !cleaned_up => Ok(migration),
        _ => task::open(state, namespace, plan).await,
    }
}
