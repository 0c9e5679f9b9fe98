//! `berth migrate`: the vendor files are translated here, offline (`berth-migrate`'s adapters),
//! and the neutral bundle is planned by the API (which attests the plan). The task file keeps
//! the plan and the receipts between commands; the server keeps its own copy, so an edited
//! file is refused, not trusted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use berth_api::migrations::{
    ApplyProgress, ApplyProgressKind, ApplyRequest, ApplyResult, BundleEnvironment, BundleProject,
    BundleTarget, CleanupRequest, CleanupResult, Evidence, MigrationPlan, ReadbackRequest, Receipt,
    StatusResult, VendorSource, VerificationResult,
};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::infra::server_id;
use super::{Answer, Ctx};
use crate::cli::{Migrate, Platform};
use crate::error::{CliError, CliResult};
use crate::output::Style;

/// What the task file holds (Appaloft's CLI task file shape).
#[derive(Serialize, Deserialize, Debug)]
struct Task {
    plan: MigrationPlan,
    #[serde(default)]
    receipts: Vec<Receipt>,
}

pub fn migrate(ctx: &Ctx, command: Migrate) -> CliResult<()> {
    match command {
        Migrate::Plan {
            from,
            files,
            server,
            project,
            environment,
            task_file,
        } => {
            let target = server.map(|s| server_id(ctx, &s)).transpose()?;
            let bundle = bundle_of(from, &files, target, project, environment)?;
            let Answer {
                raw: answer,
                value: plan,
            } = ctx
                .api()?
                .post::<MigrationPlan>("/migrations/plan", &json!({ "bundle": bundle }))?;
            let summary = plan_summary(ctx, &plan, &task_file);
            let task = Task {
                plan,
                receipts: Vec::new(),
            };
            write_task(&task_file, &task)?;
            ctx.out.done(&answer, &summary);
            Ok(())
        }
        Migrate::Apply { task, confirm } => apply(ctx, &task.task, Some(confirm)),
        Migrate::Resume { task } => apply(ctx, &task.task, None),
        Migrate::Status { task } => status(ctx, &task.task),
        Migrate::Verify { task } => verify(ctx, &task.task),
        Migrate::Cleanup {
            task,
            confirm,
            confirm_data_loss,
        } => cleanup(ctx, &task.task, confirm, confirm_data_loss),
    }
}

/// The neutral bundle: translated from the platform's files, or read as it is.
fn bundle_of(
    from: Platform,
    files: &[PathBuf],
    target: Option<String>,
    project: Option<String>,
    environment: Option<String>,
) -> CliResult<Value> {
    let mut contents = BTreeMap::new();
    for path in files {
        let text = std::fs::read_to_string(path)
            .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))?;
        contents.insert(path.display().to_string(), text);
    }
    let provider = match from {
        Platform::Railway => "railway",
        Platform::Heroku => "heroku",
        Platform::Compose => "compose",
        Platform::Bundle => return neutral_bundle(contents, target, project, environment),
    };
    let source = VendorSource {
        provider: provider.into(),
        files: contents,
        target: target.map(|id| BundleTarget {
            deployment_target_id: id,
            destination_id: None,
        }),
        project: project.map(|name| BundleProject {
            name,
            description: None,
            organization_id: None,
        }),
        environment: environment.map(|name| BundleEnvironment {
            kind: environment_kind(&name),
            name,
        }),
    };
    let bundle = berth_migrate::adapters::translate(&source)
        .map_err(|e| CliError::Usage(format!("{}: {}", e.field, e.message)))?;
    serde_json::to_value(bundle).map_err(|e| CliError::failure(e.to_string()))
}

/// A neutral bundle file (JSON or YAML), with the command line's target, project and
/// environment filled in.
fn neutral_bundle(
    contents: BTreeMap<String, String>,
    target: Option<String>,
    project: Option<String>,
    environment: Option<String>,
) -> CliResult<Value> {
    let [(name, text)]: [(String, String); 1] = contents
        .into_iter()
        .collect::<Vec<_>>()
        .try_into()
        .map_err(|_| CliError::Usage("--from bundle takes exactly one file".into()))?;
    let mut bundle: Value = serde_yaml::from_str(&text)
        .map_err(|e| CliError::Usage(format!("{name}: not JSON or YAML: {e}")))?;
    if let Some(spec) = bundle.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(id) = target {
            spec.insert("target".into(), json!({ "deploymentTargetId": id }));
        }
        if let Some(name) = project {
            spec.insert("project".into(), json!({ "name": name }));
        }
        if let Some(name) = environment {
            spec.insert(
                "environment".into(),
                json!({ "name": name, "kind": environment_kind(&name) }),
            );
        }
    }
    Ok(bundle)
}

/// An environment's kind from its name: the kinds' own names, else `custom`.
fn environment_kind(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let kinds = [
        "local",
        "development",
        "test",
        "staging",
        "production",
        "preview",
    ];
    match kinds.iter().find(|k| **k == lower) {
        Some(kind) => kind.to_string(),
        None if lower == "prod" => "production".into(),
        None => "custom".into(),
    }
}

fn read_task(path: &Path) -> CliResult<Task> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::Usage(format!(
            "{}: {e} (write it with `berth migrate plan`)",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::Usage(format!(
            "{}: not a migration task file: {e}",
            path.display()
        ))
    })
}

fn write_task(path: &Path, task: &Task) -> CliResult<()> {
    let text = serde_json::to_string_pretty(task).map_err(|e| CliError::failure(e.to_string()))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))
}

fn plan_summary(ctx: &Ctx, plan: &MigrationPlan, task_file: &Path) -> String {
    let mut lines = vec![format!("{} steps:", plan.steps.len())];
    for step in &plan.steps {
        lines.push(format!("  {}  {}", step.id, step.operation_key));
    }
    for blocker in &plan.blockers {
        let line = format!(
            "blocker {} at {}: {}",
            blocker.code, blocker.path, blocker.message
        );
        lines.push(ctx.out.paint(Style::Red, &line));
    }
    for warning in &plan.warnings {
        lines.push(ctx.out.paint(Style::Yellow, &format!("warning: {warning}")));
    }
    if !plan.variable_report.is_empty() {
        lines.push("variables:".into());
        for entry in &plan.variable_report {
            let owner = entry.resource_ref.as_deref().unwrap_or("(environment)");
            let note = entry
                .note
                .as_deref()
                .map(|n| format!(" — {n}"))
                .unwrap_or_default();
            lines.push(format!(
                "  {owner} {} → {}{note}",
                entry.key, entry.migrated_as
            ));
        }
    }
    lines.push(format!("task file: {}", task_file.display()));
    match plan.blockers.is_empty() {
        true => lines.push(format!(
            "apply with: berth migrate apply {} --confirm {}",
            task_file.display(),
            plan.plan_digest
        )),
        false => lines.push("blocked: resolve the blockers and plan again".into()),
    }
    lines.join("\n")
}

/// The values of the plan's `env://NAME` references, from this shell's environment.
fn environment_secrets(plan: &MigrationPlan) -> BTreeMap<String, String> {
    berth_migrate::plan::secret_refs(plan)
        .into_iter()
        .filter_map(|(_, reference)| {
            let name = reference.strip_prefix("env://")?.to_string();
            let value = std::env::var(&name).ok().filter(|v| !v.is_empty())?;
            Some((reference, value))
        })
        .collect()
}

/// The stream of a run: the plan applied as `POST /migrations/apply` does, each step reported
/// as it lands.
const APPLY_STREAM: &str = "/migrations/apply/stream";

fn apply(ctx: &Ctx, path: &Path, confirm: Option<String>) -> CliResult<()> {
    let mut task = read_task(path)?;
    let request = ApplyRequest {
        confirmed_plan_digest: confirm.unwrap_or_else(|| task.plan.plan_digest.clone()),
        prior_receipts: task.receipts.clone(),
        secret_values: environment_secrets(&task.plan),
        plan: task.plan.clone(),
    };
    let events = ctx
        .api()?
        .stream(Method::POST, APPLY_STREAM, &[], Some(&request))?;
    let result = follow_apply(ctx, path, &mut task, events)?;
    report_apply(ctx, path, &result)
}

/// Prints each step as it lands and keeps its receipt in the task file at once, so a run cut
/// short (the connection lost, Ctrl-C) resumes where it stopped; answers the run's result.
fn follow_apply(
    ctx: &Ctx,
    path: &Path,
    task: &mut Task,
    events: impl Iterator<Item = std::io::Result<String>>,
) -> CliResult<ApplyResult> {
    let resume = || format!("run `berth migrate resume {}`", path.display());
    for data in events {
        let data = data.map_err(|error| {
            CliError::failure(format!("the stream broke: {error}; {}", resume()))
        })?;
        let progress: ApplyProgress = serde_json::from_str(&data).map_err(|error| {
            CliError::failure(format!(
                "{APPLY_STREAM}: unexpected event ({error}): {data}"
            ))
        })?;
        match progress.kind {
            ApplyProgressKind::Started if ctx.out.human() => println!(
                "task: kubectl get bmig {} ({} of {} steps done)",
                progress.migration_name, progress.completed_steps, progress.total_steps
            ),
            ApplyProgressKind::Started => {}
            ApplyProgressKind::StepCompleted => {
                let Some(receipt) = progress.receipt else {
                    continue;
                };
                if ctx.out.human() {
                    println!("✓ {} ({})", receipt.step_id, receipt.ownership);
                }
                task.receipts.push(receipt);
                write_task(path, task)?;
            }
            ApplyProgressKind::Finished => {
                return progress.result.ok_or_else(|| {
                    CliError::failure(format!("{APPLY_STREAM}: a finished run without a result"))
                });
            }
            ApplyProgressKind::Interrupted => {
                let why = progress.message.unwrap_or_default();
                return Err(CliError::failure(format!(
                    "the run stopped: {why}; {}",
                    resume()
                )));
            }
        }
    }
    Err(CliError::failure(format!(
        "the stream ended before the run did; {}",
        resume()
    )))
}

/// What the run came to: the failure and how to go on, or how to verify it.
fn report_apply(ctx: &Ctx, path: &Path, result: &ApplyResult) -> CliResult<()> {
    let answer = serde_json::to_value(result).unwrap_or_default();
    if let Some(failure) = &result.failure {
        let line = format!(
            "✗ {}: {} ({})",
            failure.step_id, failure.message, failure.code
        );
        ctx.out.done(&answer, &ctx.out.paint(Style::Red, &line));
        return Err(CliError::failure(format!(
            "migration {}: {} step(s) left; fix the cause and run `berth migrate resume {}`",
            result.state,
            result.resume.remaining_step_ids.len(),
            path.display()
        )));
    }
    let done = format!(
        "completed; check it with: berth migrate verify {}",
        path.display()
    );
    ctx.out.done(&answer, &done);
    Ok(())
}

fn readback(task: &Task) -> ReadbackRequest {
    ReadbackRequest {
        plan: task.plan.clone(),
        receipts: task.receipts.clone(),
    }
}

fn evidence_lines(evidence: &[Evidence]) -> Vec<String> {
    evidence
        .iter()
        .map(|e| {
            let summary: Vec<String> = e
                .summary
                .iter()
                .map(|(k, v)| format!("{k}={}", serde_json::to_value(v).unwrap_or_default()))
                .collect();
            format!(
                "  {:<10} {:<40} {:<24} {}",
                e.evaluation,
                e.step_id,
                e.query_name,
                summary.join(" ")
            )
        })
        .collect()
}

fn status(ctx: &Ctx, path: &Path) -> CliResult<()> {
    let task = read_task(path)?;
    let Answer {
        raw: answer,
        value: result,
    } = ctx
        .api()?
        .post::<StatusResult>("/migrations/status", &readback(&task))?;
    let mut lines = vec![format!(
        "{}: {} done, {} pending",
        result.state,
        result.completed_step_ids.len(),
        result.pending_step_ids.len()
    )];
    lines.extend(evidence_lines(&result.evidence));
    ctx.out.done(&answer, &lines.join("\n"));
    Ok(())
}

fn verify(ctx: &Ctx, path: &Path) -> CliResult<()> {
    let task = read_task(path)?;
    let Answer {
        raw: answer,
        value: result,
    } = ctx
        .api()?
        .post::<VerificationResult>("/migrations/verify", &readback(&task))?;
    let mut lines = vec![format!("verify: {}", result.state)];
    lines.extend(evidence_lines(&result.evidence));
    ctx.out.done(&answer, &lines.join("\n"));
    match result.state.as_str() {
        "passed" => Ok(()),
        other => Err(CliError::failure(format!("verify: {other}"))),
    }
}

fn cleanup(ctx: &Ctx, path: &Path, confirm: String, confirm_data_loss: bool) -> CliResult<()> {
    let task = read_task(path)?;
    let request = CleanupRequest {
        plan: task.plan,
        receipts: task.receipts,
        confirmed_plan_digest: confirm,
        confirm_data_loss,
    };
    let Answer {
        raw: answer,
        value: result,
    } = ctx
        .api()?
        .post::<CleanupResult>("/migrations/cleanup", &request)?;
    let mut lines: Vec<String> = result
        .actions
        .iter()
        .map(|a| format!("✓ {} {}", a.step_id, a.command_name))
        .collect();
    for skipped in &result.skipped_step_ids {
        lines.push(format!("kept {skipped} (it existed before the migration)"));
    }
    if let Some(failure) = &result.failure {
        lines.push(ctx.out.paint(
            Style::Red,
            &format!("✗ {}: {}", failure.step_id, failure.message),
        ));
        ctx.out.done(&answer, &lines.join("\n"));
        return Err(CliError::failure(format!(
            "cleanup {}: {} step(s) left",
            result.state,
            result.remaining_step_ids.len()
        )));
    }
    lines.push(format!("cleanup {}", result.state));
    ctx.out.done(&answer, &lines.join("\n"));
    Ok(())
}
