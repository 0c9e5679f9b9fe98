//! Apply: runs the plan's steps from the first without a receipt, each as an ordinary
//! operation of the caller, recording a receipt in the task after each one. A step re-run
//! after a lost receipt (a dropped response, a killed shim) names the objects it created the
//! first time (ids derived from the task and the step), so nothing is created twice; a
//! project or environment that already existed is `reused`, and cleanup leaves it alone.

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use berth_api::migrations::{
    ApplyResult, MigrationPlan, PROTOCOL, Receipt, Resume, Scalar, Step, StepFailure,
};
use berth_crds::migration::Migration;
use berth_migrate::plan::{Unresolved, cleanup_order, resolve_input};
use berth_vocabulary::migration_runner::NextStep;
use kube::ResourceExt;
use serde_json::{Map, Value, json};

use super::dependencies;
use super::dispatch::{Dispatcher, Refusal};
use super::operations::apply_call;
use super::secrets::ResolvedSecrets;
use super::task::{self, Progress, phase};
use crate::domain::objects::all_in;
use crate::error::ApiResult;
use crate::token::{seeded_id, with_id_seed};

pub const CREATED: &str = "created";
pub const REUSED: &str = "reused";

/// Who hears of each receipt as it lands: no one (the plain answer) or a stream's client.
pub trait Listener: Send {
    /// `receipt` was recorded in the task; false when no one listens any more, so the run stops
    /// before its next step (applying again resumes there).
    fn landed(&mut self, receipt: &Receipt, completed: usize) -> impl Future<Output = bool> + Send;
}

/// The plain answer: no one hears of a step before the run ends.
pub struct Unheard;

impl Listener for Unheard {
    async fn landed(&mut self, _: &Receipt, _: usize) -> bool {
        true
    }
}

/// Runs what is left of the plan and answers as Appaloft's apply does; `listener` hears of
/// each receipt once it is recorded.
pub async fn run(
    dispatcher: &Dispatcher,
    namespace: &str,
    migration: &Migration,
    plan: &MigrationPlan,
    secrets: &ResolvedSecrets,
    listener: &mut impl Listener,
) -> ApiResult<ApplyResult> {
    let mut receipts = task::receipts(migration);
    let name = migration.name_any();
    for step in plan.steps.iter().skip(receipts.len()) {
        let seed = seed_of(migration, step);
        let outcome = run_step(
            dispatcher, namespace, &name, &seed, step, &receipts, secrets,
        )
        .await;
        match outcome {
            Ok(receipt) => {
                receipts.push(receipt);
                let progress = progress(phase::APPLYING, &receipts, None);
                task::record(dispatcher.state(), namespace, migration, progress).await?;
                let landed = receipts.last().expect("just pushed");
                if !listener.landed(landed, receipts.len()).await {
                    tracing::info!(migration = %name, "migration run stopped: its client left");
                    return Ok(result(plan, migration, receipts, None));
                }
            }
            Err(failure) => {
                let progress = progress(phase::FAILED, &receipts, Some(&failure));
                task::record(dispatcher.state(), namespace, migration, progress).await?;
                tracing::warn!(migration = %migration.name_any(), step = %failure.step_id,
                    code = %failure.code, "migration step failed");
                return Ok(result(plan, migration, receipts, Some(*failure)));
            }
        }
    }
    let progress = progress(phase::APPLIED, &receipts, None);
    task::record(dispatcher.state(), namespace, migration, progress).await?;
    Ok(result(plan, migration, receipts, None))
}

/// Runs the plan's first step without a receipt (for berth-controller, which records it).
pub async fn next(
    dispatcher: &Dispatcher,
    namespace: &str,
    migration: &Migration,
    plan: &MigrationPlan,
    secrets: &ResolvedSecrets,
) -> NextStep {
    let receipts = task::receipts(migration);
    let Some(step) = plan.steps.get(receipts.len()) else {
        return NextStep::Finished;
    };
    let seed = seed_of(migration, step);
    let name = migration.name_any();
    match run_step(
        dispatcher, namespace, &name, &seed, step, &receipts, secrets,
    )
    .await
    {
        Ok(receipt) => NextStep::Applied { receipt },
        Err(failure) => {
            tracing::warn!(migration = %migration.name_any(), step = %failure.step_id,
                code = %failure.code, "migration step failed");
            NextStep::Stopped { failure: *failure }
        }
    }
}

/// What the ids a step derives are seeded with: the task's uid and the step, so a step run
/// again names the objects it created the first time.
fn seed_of(migration: &Migration, step: &Step) -> String {
    let base = migration.uid().unwrap_or_else(|| migration.name_any());
    format!("{base}:{}", step.id)
}

fn progress<'a>(
    phase: &'a str,
    receipts: &'a [Receipt],
    failure: Option<&'a StepFailure>,
) -> Progress<'a> {
    Progress {
        phase,
        receipts,
        failure,
        cleaned_step_ids: &[],
    }
}

/// The answer: every receipt so far, what is left, and what cleanup would undo.
pub fn result(
    plan: &MigrationPlan,
    migration: &Migration,
    receipts: Vec<Receipt>,
    failure: Option<StepFailure>,
) -> ApplyResult {
    let remaining_step_ids = plan
        .steps
        .iter()
        .skip(receipts.len())
        .map(|s| s.id.clone())
        .collect::<Vec<_>>();
    let cleanup_step_ids = cleanup_order(plan, &receipts)
        .into_iter()
        .map(|i| receipts[i].step_id.clone())
        .collect();
    let state = match (&failure, receipts.is_empty(), remaining_step_ids.is_empty()) {
        (None, _, true) => "completed",
        (Some(_), true, _) => "failed",
        _ => "partial",
    };
    ApplyResult {
        protocol: PROTOCOL.into(),
        plan_digest: plan.plan_digest.clone(),
        state: state.into(),
        receipts,
        failure,
        resume: Resume {
            remaining_step_ids,
            cleanup_step_ids,
        },
        migration_name: migration.name_any(),
    }
}

async fn run_step(
    dispatcher: &Dispatcher,
    namespace: &str,
    migration: &str,
    seed: &str,
    step: &Step,
    receipts: &[Receipt],
    secrets: &ResolvedSecrets,
) -> Result<Receipt, Box<StepFailure>> {
    let input = resolve_input(step, receipts, &mut |reference| secrets.value(reference))
        .map_err(|unresolved| unresolved_failure(step, unresolved))?;
    if let Some(done) = already_done(dispatcher, namespace, seed, step, &input).await {
        tracing::debug!(migration = %migration, step = %done.step_id, "migration step found done");
        return Ok(done);
    }
    if step.operation_key == "deployments.create" {
        let resource = input.get("resourceId").and_then(Value::as_str);
        dependencies::wait_ready(dispatcher.state(), namespace, resource.unwrap_or_default())
            .await
            .map_err(|why| failure(step, "dependency_not_ready", "infra", why, true))?;
    }
    let mut call = apply_call(&step.operation_key, &input)
        .map_err(|message| failure(step, "validation_error", "user", message, false))?;
    if step.operation_key == "domain-bindings.create"
        && let Some(Value::Object(body)) = call.body.as_mut()
    {
        body.insert("idempotencyKey".into(), json!(format!("migration:{seed}")));
    }
    let answer = with_id_seed(
        seed.to_string(),
        dispatcher.call(call.method.clone(), &call.path, call.body.as_ref()),
    )
    .await;
    let done = match answer {
        Ok(answer) => receipt(step, &answer, CREATED),
        Err(refusal) if is_existing_secret(step, &refusal) => {
            rotate_secret(dispatcher, step, &input).await
        }
        Err(refusal) => Err(refused(step, refusal)),
    }?;
    tracing::info!(migration = %migration, step = %done.step_id, ownership = %done.ownership,
        "migration step completed");
    Ok(done)
}

/// A secret set by an earlier run of this step already exists: set it again (rotate).
fn is_existing_secret(step: &Step, refusal: &Refusal) -> bool {
    step.operation_key == "resources.set-secret" && refusal.status == StatusCode::CONFLICT
}

async fn rotate_secret(
    dispatcher: &Dispatcher,
    step: &Step,
    input: &Map<String, Value>,
) -> Result<Receipt, Box<StepFailure>> {
    let text = |name: &str| input.get(name).and_then(Value::as_str).unwrap_or_default();
    let path = format!("/resources/{}/secrets/{}", text("resourceId"), text("key"));
    let body = json!({"value": input.get("value"), "exposure": input.get("exposure")});
    match dispatcher.call(Method::POST, &path, Some(&body)).await {
        Ok(answer) => receipt(step, &answer, CREATED),
        Err(refusal) => Err(refused(step, refusal)),
    }
}

/// The receipt of a step whose object exists already: made by an earlier run of this step
/// (the id it derives), or — for a project or environment — one of the same name that was
/// there before the migration (`reused`).
async fn already_done(
    dispatcher: &Dispatcher,
    namespace: &str,
    seed: &str,
    step: &Step,
    input: &Map<String, Value>,
) -> Option<Receipt> {
    let caches = &dispatcher.state().caches;
    let text = |name: &str| input.get(name).and_then(Value::as_str).unwrap_or_default();
    let exists = |store_has: bool, id: String| store_has.then_some(id);
    let (id, ownership) = match step.operation_key.as_str() {
        "projects.create" => {
            let projects = all_in(&caches.projects, namespace);
            let mine = seeded_id(seed, "prj");
            let same_name = projects
                .iter()
                .find(|p| !p.spec.archived && p.spec.name.eq_ignore_ascii_case(text("name")));
            mine_or_reused(&projects, mine, same_name.map(|p| p.name_any()))?
        }
        "environments.create" => {
            let environments = all_in(&caches.environments, namespace);
            let mine = seeded_id(seed, "env");
            let same_name = environments.iter().find(|e| {
                !e.spec.archived
                    && e.spec.project_id == text("projectId")
                    && e.spec.name.eq_ignore_ascii_case(text("name"))
            });
            mine_or_reused(&environments, mine, same_name.map(|e| e.name_any()))?
        }
        "storage-volumes.create" => {
            let id = seeded_id(seed, "vol");
            let found = all_in(&caches.storage_volumes, namespace)
                .iter()
                .any(|v| v.name_any() == id);
            (exists(found, id)?, CREATED)
        }
        "resources.create" => {
            let id = seeded_id(seed, "res");
            let found = all_in(&caches.resources, namespace)
                .iter()
                .any(|r| r.name_any() == id);
            (exists(found, id)?, CREATED)
        }
        "resources.attach-storage" => {
            let id = seeded_id(seed, "att");
            let found = all_in(&caches.resources, namespace).iter().any(|r| {
                r.name_any() == text("resourceId")
                    && r.spec
                        .storage_attachments
                        .iter()
                        .any(|a| a.attachment_id == id)
            });
            (exists(found, id)?, CREATED)
        }
        "deployments.create" => {
            let resource = text("resourceId").to_string();
            let name = with_id_seed(seed.to_string(), async move {
                crate::domain::deployments::deployment_name(&resource)
            })
            .await;
            let found = all_in(&caches.deployments, namespace)
                .iter()
                .any(|d| d.name_any() == name);
            (exists(found, name)?, CREATED)
        }
        other => {
            let id = dependencies::already_done(dispatcher.state(), namespace, seed, other, input)?;
            (id, CREATED)
        }
    };
    receipt(step, &json!({ "id": id }), ownership).ok()
}

/// The object this step created earlier (`mine`, if it exists), else one of the same name that
/// was there before (reused).
fn mine_or_reused<K: kube::Resource>(
    existing: &[std::sync::Arc<K>],
    mine: String,
    same_name: Option<String>,
) -> Option<(String, &'static str)> {
    if existing
        .iter()
        .any(|o| o.meta().name.as_deref() == Some(mine.as_str()))
    {
        return Some((mine, CREATED));
    }
    same_name.map(|name| (name, REUSED))
}

/// The receipt of a step from the operation's answer: each `produces` name read from its
/// field of the answer.
fn receipt(step: &Step, answer: &Value, ownership: &str) -> Result<Receipt, Box<StepFailure>> {
    let mut output = BTreeMap::new();
    for (name, field) in step.produces.iter().flatten() {
        let scalar = match answer.get(field) {
            Some(Value::String(s)) => Scalar::Text(s.clone()),
            Some(Value::Bool(b)) => Scalar::Flag(*b),
            Some(Value::Number(n)) if n.is_i64() => Scalar::Number(n.as_i64().unwrap_or_default()),
            _ => {
                let message = format!("the operation's answer has no {field} for {name}");
                return Err(failure(step, "internal_error", "infra", message, true));
            }
        };
        output.insert(name.clone(), scalar);
    }
    Ok(Receipt {
        step_id: step.id.clone(),
        operation_key: step.operation_key.clone(),
        state: "completed".into(),
        output,
        ownership: ownership.into(),
    })
}

fn refused(step: &Step, refusal: Refusal) -> Box<StepFailure> {
    Box::new(StepFailure {
        step_id: step.id.clone(),
        operation_key: step.operation_key.clone(),
        code: refusal.code,
        category: refusal.category,
        message: refusal.message,
        retryable: refusal.retriable,
    })
}

fn failure(
    step: &Step,
    code: &str,
    category: &str,
    message: String,
    retriable: bool,
) -> Box<StepFailure> {
    Box::new(StepFailure {
        step_id: step.id.clone(),
        operation_key: step.operation_key.clone(),
        code: code.into(),
        category: category.into(),
        message,
        retryable: retriable,
    })
}

fn unresolved_failure(step: &Step, unresolved: Unresolved) -> Box<StepFailure> {
    match unresolved {
        Unresolved::Reference { placeholder } => failure(
            step,
            "migration_reference_unresolved",
            "user",
            format!("{placeholder} names no output of an earlier step"),
            false,
        ),
        Unresolved::Secret { reason, .. } => {
            failure(step, "migration_secret_unavailable", "user", reason, false)
        }
    }
}
