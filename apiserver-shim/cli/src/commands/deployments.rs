//! `berth deployments`: list, show, follow, cancel, retry and roll back deployment attempts;
//! `berth resources redeploy`.

use std::collections::HashMap;

use berth_api::common::{Confirmation, IdResponse};
use berth_api::deployment_proof::DeploymentProof;
use berth_api::deployment_records::{
    CancelDeployment, DeploymentCanceled, DeploymentList, EntryStatus, RedeployResource,
    RetryDeployment, RollbackDeployment, ShowDeployment, TimelineEntry, TimelineEnvelope,
};
use berth_api::progress::{ProgressEvent, StreamStatus};
use reqwest::Method;
use serde_json::Value;

use super::activity::follow_changes;
use super::find_resource;
use super::{Ctx, count_at, read_as};
use crate::cli::{DeploymentFilters, Deployments};
use crate::error::{CliError, CliResult};
use crate::output::{Column, cell, col, items, wire};
use crate::progress::ProgressView;

const COLUMNS: &[Column] = &[
    col("ID", "/id"),
    col("RESOURCE", "/resourceId"),
    col("STATUS", "/status"),
    col("TRIGGER", "/trigger/kind"),
    col("BY", "/trigger/actorId"),
    col("COMMIT", "/sourceCommitSha"),
    col("SUBJECT", "/sourceCommit/subject"),
    col("IMAGE", "/imageRef"),
    col("CREATED", "/createdAt"),
    col("FINISHED", "/finishedAt"),
];

const FIELDS: &[Column] = &[
    col("ID", "/deployment/id"),
    col("RESOURCE", "/deployment/resourceId"),
    col("SERVER", "/deployment/serverId"),
    col("STATUS", "/status/current"),
    col("PHASE", "/deployment/phase"),
    col("STEP", "/deployment/step/label"),
    col("TRIGGER", "/deployment/trigger/kind"),
    col("BY", "/deployment/trigger/actorId"),
    col("SOURCE", "/deployment/runtimePlan/source/locator"),
    col("COMMIT", "/deployment/sourceCommitSha"),
    col("SUBJECT", "/deployment/sourceCommit/subject"),
    col("AUTHOR", "/deployment/sourceCommit/authorName"),
    col("IMAGE", "/deployment/imageRef"),
    col("ROLLBACK OF", "/deployment/rollbackOfDeploymentId"),
    col("REPEATS", "/deployment/sourceDeploymentId"),
    col("ERROR", "/deployment/lastError/code"),
    col("MESSAGE", "/deployment/lastError/message"),
    col("CREATED", "/status/createdAt"),
    col("STARTED", "/status/startedAt"),
    col("FINISHED", "/status/finishedAt"),
    col("TIMELINE", "/timeline/timelineCount"),
];

const PROOF_FIELDS: &[Column] = &[
    col("DEPLOYMENT", "/deploymentId"),
    col("VERDICT", "/verdict"),
    col("IMAGE", "/observed/artifact/reference"),
    col("SERVING", "/observed/workload/deploymentId"),
    col("HEALTH", "/observed/health/status"),
    col("HEALTH SAYS", "/observed/health/summary"),
    col("ACCESS", "/observed/access/status"),
    col("ACCESS SAYS", "/observed/access/summary"),
    col("URL", "/observed/access/routes/0/url"),
    col("MISMATCH", "/mismatches/0/reasonCode"),
];

pub fn deployments(ctx: &Ctx, command: Deployments) -> CliResult<()> {
    match command {
        Deployments::List {
            filters,
            limit,
            all,
            watch,
        } => {
            let mut query = query(ctx, &filters)?;
            if let Some(limit) = limit {
                query.push(("limit", limit.to_string()));
            }
            let listed = list(ctx, &query, all)?;
            if watch {
                watch_list(ctx, &query, listed)?;
            }
            Ok(())
        }
        Deployments::Count { filters } => {
            let query = query(ctx, &filters)?;
            count_at(ctx, "/deployments/count", &query)
        }
        Deployments::Show { deployment } => {
            let path = format!("/deployments/{deployment}");
            let answer = ctx.api()?.get::<ShowDeployment>(&path, &[])?;
            ctx.out.record(&answer.raw, FIELDS, "/deployment/id");
            Ok(())
        }
        Deployments::Follow { deployment } => follow(ctx, &deployment),
        Deployments::Proof { deployment } => {
            let path = format!("/deployments/{deployment}/proof");
            let answer = ctx.api()?.get::<DeploymentProof>(&path, &[])?;
            ctx.out.record(&answer.raw, PROOF_FIELDS, "/verdict");
            Ok(())
        }
        Deployments::Cancel { deployment } => {
            let body = CancelDeployment {
                confirm: Some(deployment.clone()),
                resource_id: None,
            };
            let path = format!("/deployments/{deployment}/cancel");
            let answer = ctx.api()?.post::<DeploymentCanceled>(&path, &body)?;
            let status = wire(&answer.value.status);
            ctx.out
                .done(&answer.raw, &format!("Deployment {deployment} {status}"));
            Ok(())
        }
        Deployments::Retry { deployment, follow } => {
            let body = RetryDeployment {
                confirmation: Some(confirm_deployment(&deployment)),
                ..RetryDeployment::default()
            };
            let path = format!("/deployments/{deployment}/retry");
            started(ctx, &path, &body, "Retrying", follow)
        }
        Deployments::Rollback {
            deployment,
            to,
            follow,
        } => {
            let body = RollbackDeployment {
                rollback_candidate_deployment_id: to,
                confirmation: Some(confirm_deployment(&deployment)),
                ..RollbackDeployment::default()
            };
            let path = format!("/deployments/{deployment}/rollback");
            started(ctx, &path, &body, "Rolling back with", follow)
        }
    }
}

fn confirm_deployment(id: &str) -> Confirmation {
    Confirmation {
        deployment_id: Some(id.to_string()),
        ..Confirmation::default()
    }
}

/// `berth resources redeploy RESOURCE`.
pub fn redeploy(ctx: &Ctx, resource: &str, from: Option<String>, follow_it: bool) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let body = RedeployResource {
        source_deployment_id: from,
        confirmation: Some(Confirmation {
            resource_id: Some(id.clone()),
            ..Confirmation::default()
        }),
        ..RedeployResource::default()
    };
    started(
        ctx,
        &format!("/resources/{id}/redeploy"),
        &body,
        "Redeploying with",
        follow_it,
    )
}

/// Posts an action that starts an attempt; prints its id and follows it when asked.
fn started(
    ctx: &Ctx,
    path: &str,
    body: &impl serde::Serialize,
    verb: &str,
    follow_it: bool,
) -> CliResult<()> {
    let answer = ctx.api()?.post::<IdResponse>(path, body)?;
    let id = &answer.value.id;
    if ctx.out.quiet {
        println!("{id}");
    } else if !follow_it || !ctx.out.human() {
        ctx.out
            .done(&answer.raw, &format!("{verb} deployment {id}"));
    } else {
        println!("{verb} deployment {id}");
    }
    if follow_it {
        follow(ctx, id)?;
    }
    Ok(())
}

/// The list query of `filters`, names resolved to ids.
fn query(ctx: &Ctx, filters: &DeploymentFilters) -> CliResult<Vec<(&'static str, String)>> {
    let mut query = Vec::new();
    if let Some(resource) = &filters.resource {
        query.push(("resourceId", find_resource(ctx, resource)?.id));
    }
    if let Some(project) = &filters.project {
        query.push(("projectId", super::workspace::project_id(ctx, project)?));
    }
    if let Some(environment) = &filters.environment {
        query.push(("environmentId", super::environment_id(ctx, environment)?));
    }
    if let Some(server) = &filters.server {
        query.push(("serverId", super::infra::server_id(ctx, server)?));
    }
    if let Some(status) = &filters.status {
        query.push(("status", status.clone()));
    }
    Ok(query)
}

/// Prints the attempts `query` selects (every page with `all`) and returns them.
fn list(ctx: &Ctx, query: &[(&'static str, String)], all: bool) -> CliResult<Vec<Value>> {
    let api = ctx.api()?;
    let mut answer = api.get::<DeploymentList>("/deployments", query)?;
    let mut rows = items(&answer.raw, "/items");
    // Every page, printed as one answer.
    while all && let Some(cursor) = answer.value.next_cursor.clone() {
        let mut next = query.to_vec();
        next.push(("cursor", cursor));
        answer = api.get("/deployments", &next)?;
        rows.extend(items(&answer.raw, "/items"));
    }
    let mut answer = answer.raw;
    if all && let Some(object) = answer.as_object_mut() {
        object.insert("items".into(), Value::Array(rows.clone()));
    }
    ctx.out.list(&answer, &rows, COLUMNS, "/id");
    Ok(rows)
}

/// `--watch`: each time the change feed says an attempt changed, the list is read again and
/// every attempt that reads differently from when it was last printed is printed again.
fn watch_list(ctx: &Ctx, query: &[(&'static str, String)], listed: Vec<Value>) -> CliResult<()> {
    let mut printed: HashMap<String, Value> = listed
        .into_iter()
        .map(|row| (cell(&row, "/id"), row))
        .collect();
    let mut feed = vec![("kind", "deployment".to_string())];
    feed.extend(
        query
            .iter()
            .filter(|(key, _)| *key == "resourceId")
            .cloned(),
    );
    let hint = "run berth deployments list --watch again";
    follow_changes(ctx, &feed, None, hint, |_, _| {
        let answer = ctx.api()?.get::<DeploymentList>("/deployments", query)?;
        for row in items(&answer.raw, "/items") {
            let id = cell(&row, "/id");
            if printed.get(&id) != Some(&row) {
                ctx.out.watched(&row, COLUMNS, "/id");
                printed.insert(id, row);
            }
        }
        Ok(true)
    })
}

/// A timeline entry as the progress view shows it.
fn as_event(entry: &TimelineEntry) -> ProgressEvent {
    ProgressEvent {
        timestamp: entry.occurred_at.clone(),
        source: entry.source,
        phase: entry.phase,
        level: entry.level,
        message: entry.message.clone(),
        deployment_id: entry.deployment_id.clone(),
        status: match entry.status {
            EntryStatus::Running => StreamStatus::Running,
            EntryStatus::Succeeded => StreamStatus::Succeeded,
            EntryStatus::Failed => StreamStatus::Failed,
        },
        step: entry.step.clone(),
        stream: entry.stream,
    }
}

/// How many times `follow` reconnects after the stream broke before it gives up.
const RECONNECTS: u32 = 5;

/// Prints the attempt's timeline as it is recorded, reconnecting after the last entry seen
/// when the stream breaks, until the attempt ended: exit 0 when it succeeded, 1 otherwise.
fn follow(ctx: &Ctx, id: &str) -> CliResult<()> {
    let path = format!("/deployments/{id}/timeline/stream");
    let mut view = ProgressView::default();
    let mut after = 0i64;
    let mut reconnects = 0;
    loop {
        let query = [("after", after.to_string())];
        let events = ctx.api()?.stream(Method::GET, &path, &query, None::<&()>)?;
        for data in events {
            let data = match data {
                Ok(data) => data,
                Err(_) if reconnects < RECONNECTS => break,
                Err(error) => return Err(CliError::failure(format!("the stream broke: {error}"))),
            };
            let envelope: TimelineEnvelope = read_as(
                "timeline event",
                &serde_json::from_str(&data).unwrap_or(Value::Null),
            )?;
            match envelope {
                TimelineEnvelope::Entry { entry, .. } => {
                    after = entry.sequence;
                    if ctx.out.human() {
                        for line in view.lines(&ctx.out, &as_event(&entry)) {
                            println!("{line}");
                        }
                    } else if !ctx.out.quiet {
                        println!("{data}");
                    }
                }
                TimelineEnvelope::Closed { status, .. } => {
                    if !ctx.out.human() && !ctx.out.quiet {
                        println!("{data}");
                    }
                    let word = status
                        .and_then(|s| serde_json::to_value(s).ok())
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_else(|| "ended".into());
                    return match word.as_str() {
                        "succeeded" => Ok(()),
                        _ => Err(CliError::failure(format!("deployment {id} {word}"))),
                    };
                }
            }
        }
        reconnects += 1;
        if reconnects > RECONNECTS {
            return Err(CliError::failure(format!(
                "the stream of deployment {id} ended before the attempt did"
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}
