//! Reading how a resource does: runtime logs, health, the diagnostic summary, access-failure
//! evidence and a deployment's stored timeline.

use berth_api::access_failures::AccessFailureLookup;
use berth_api::deployments::{DeploymentState, Timeline};
use berth_api::diagnostics::DiagnosticSummary;
use berth_api::health::ResourceHealth;
use berth_api::health_history::HealthHistory;
use berth_api::progress::ProgressEvent;
use berth_api::runtime_logs::{RuntimeLogLine, RuntimeLogs};
use reqwest::Method;
use serde_json::Value;

use super::find_resource;
use super::{Answer, Ctx};
use crate::error::{CliError, CliResult};
use crate::output::{Column, Format, col, items};
use crate::progress::ProgressView;

pub fn logs(ctx: &Ctx, resource: &str, follow: bool, tail: u32) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let path = format!("/resources/{id}/runtime-logs");
    let mut query = vec![("tailLines", tail.to_string())];
    if !follow {
        let Answer {
            raw: answer,
            value: logs,
        } = ctx.api()?.get::<RuntimeLogs>(&path, &query)?;
        if ctx.out.human() {
            logs.logs.iter().for_each(print_log_line);
        } else {
            ctx.out.raw(&answer);
        }
        return Ok(());
    }
    query.push(("follow", "true".into()));
    for data in ctx.api()?.stream(Method::GET, &path, &query, None::<&()>)? {
        let data = data.map_err(|error| CliError::failure(format!("the stream broke: {error}")))?;
        if ctx.out.human() {
            match serde_json::from_str::<RuntimeLogLine>(&data) {
                Ok(line) => print_log_line(&line),
                Err(_) => println!(),
            }
        } else {
            // One JSON line per log line, as the API sent it.
            println!("{data}");
        }
    }
    Ok(())
}

/// A runtime log line as the container wrote it (already masked by the API).
fn print_log_line(line: &RuntimeLogLine) {
    println!("{}", line.message);
}

const HEALTH_FIELDS: &[Column] = &[
    col("RESOURCE", "/resourceId"),
    col("OVERALL", "/overall"),
    col("RUNTIME", "/runtime/lifecycle"),
    col("RUNTIME HEALTH", "/runtime/health"),
    col("MESSAGE", "/runtime/message"),
    col("PUBLIC ACCESS", "/publicAccess/status"),
    col("URL", "/publicAccess/url"),
    col("DEPLOYMENT", "/latestDeployment/id"),
    col("DEPLOYMENT STATUS", "/latestDeployment/status"),
    col("PARTIAL", "/partial"),
    col("SOURCE ERRORS", "/sourceErrorCodes"),
    col("OBSERVED", "/observedAt"),
];

pub fn health(ctx: &Ctx, resource: &str, live: bool) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let mode = if live { "live" } else { "cached" };
    let path = format!("/resources/{id}/health");
    let Answer {
        raw: answer,
        value: health,
    } = ctx
        .api()?
        .get::<ResourceHealth>(&path, &[("mode", mode.into())])?;
    let mut view = answer.clone();
    view["sourceErrorCodes"] = health
        .source_errors
        .iter()
        .map(|e| e.code.clone())
        .collect();
    ctx.out.record_of(&answer, &view, HEALTH_FIELDS, "/overall");
    Ok(())
}

const HISTORY_COLUMNS: &[Column] = &[
    col("OBSERVED", "/observedAt"),
    col("OVERALL", "/overall"),
    col("RUNTIME", "/runtimeLifecycle"),
    col("HEALTH", "/runtimeHealth"),
    col("PUBLIC ACCESS", "/publicAccessStatus"),
    col("PROXY", "/proxyStatus"),
    col("DEPLOYMENT", "/latestDeploymentId"),
];

pub fn health_history(ctx: &Ctx, resource: &str) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let path = format!("/resources/{id}/health-history");
    let answer = ctx.api()?.get::<HealthHistory>(&path, &[])?;
    let observations = items(&answer.raw, "/observations");
    ctx.out.list(
        &answer.raw,
        &observations,
        HISTORY_COLUMNS,
        "/observationId",
    );
    Ok(())
}

pub fn diagnose(ctx: &Ctx, resource: &str, deployment: Option<String>) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let query: Vec<(&str, String)> = deployment
        .map(|d| ("deploymentId", d))
        .into_iter()
        .collect();
    let path = format!("/resources/{id}/diagnostic-summary");
    let Answer {
        raw: answer,
        value: summary,
    } = ctx.api()?.get::<DiagnosticSummary>(&path, &query)?;
    if ctx.out.human() {
        println!("{}", summary.copy.markdown.trim_end());
    } else {
        ctx.out.raw(&answer);
    }
    Ok(())
}

pub fn why(ctx: &Ctx, request_id: &str) -> CliResult<()> {
    let path = format!("/resource-access-failures/{request_id}");
    let answer = ctx.api()?.get::<AccessFailureLookup>(&path, &[])?;
    if !ctx.out.human() {
        ctx.out.record(&answer.raw, &[], "/requestId");
        return Ok(());
    }
    let lookup = answer.value;
    let evidence = &lookup.evidence;
    let route = evidence.route.clone().unwrap_or_default();
    let rows = [
        ("REQUEST", evidence.request_id.clone()),
        ("CODE", evidence.code.clone()),
        ("HTTP STATUS", evidence.http_status.to_string()),
        ("CATEGORY", evidence.category.clone()),
        ("PHASE", evidence.phase.clone()),
        (
            "CAUSE",
            evidence.cause_code.clone().unwrap_or_else(|| "-".into()),
        ),
        (
            "REQUEST URL",
            format!("{} {}", evidence.affected.method, evidence.affected.url),
        ),
        ("RESOURCE", route.resource_id.unwrap_or_else(|| "-".into())),
        (
            "DEPLOYMENT",
            route.deployment_id.unwrap_or_else(|| "-".into()),
        ),
        ("SERVER", route.server_id.unwrap_or_else(|| "-".into())),
        ("NEXT ACTION", lookup.next_action),
        ("CAPTURED", lookup.captured_at),
        ("EXPIRES", lookup.expires_at),
    ];
    for (header, value) in rows {
        println!(
            "{}  {value}",
            ctx.out
                .paint(crate::output::Style::Bold, &format!("{header:11}"))
        );
    }
    Ok(())
}

/// How often `timeline --follow` asks for new entries.
const FOLLOW_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

pub fn timeline(ctx: &Ctx, resource: &str, deployment: &str, follow: bool) -> CliResult<()> {
    let id = find_resource(ctx, resource)?.id;
    let path = format!("/resources/{id}/deployments/{deployment}/timeline");
    if follow {
        return follow_timeline(ctx, &path);
    }
    // Every page, so the whole timeline is shown (and printed as one answer with -o).
    let api = ctx.api()?;
    let Answer {
        raw: mut answer,
        value: mut page,
    } = api.get::<Timeline>(&path, &[])?;
    let mut entries = items(&answer, "/entries");
    let mut events: Vec<ProgressEvent> = page.entries.into_iter().map(|e| e.event).collect();
    while let Some(after) = page.next_after {
        Answer {
            raw: answer,
            value: page,
        } = api.get(&path, &[("after", after.to_string())])?;
        entries.extend(items(&answer, "/entries"));
        events.extend(page.entries.into_iter().map(|e| e.event));
    }
    if !ctx.out.human() {
        if let Some(object) = answer.as_object_mut() {
            object.remove("nextAfter");
            object.insert("entries".into(), Value::Array(entries));
        }
        match ctx.out.format {
            Format::Table => ctx.out.record(&answer, &[], "/deploymentId"),
            _ => ctx.out.raw(&answer),
        }
        return Ok(());
    }
    let mut view = ProgressView::default();
    for event in &events {
        for line in view.lines(&ctx.out, event) {
            println!("{line}");
        }
    }
    Ok(())
}

/// Prints entries as they are recorded until the attempt has an outcome: one line per entry
/// for people, one JSON event per line for scripts (like `deploy -o json`).
fn follow_timeline(ctx: &Ctx, path: &str) -> CliResult<()> {
    let api = ctx.api()?;
    let mut view = ProgressView::default();
    let mut after = 0;
    loop {
        let page = api
            .get::<Timeline>(path, &[("after", after.to_string())])?
            .value;
        for entry in &page.entries {
            after = entry.sequence;
            if ctx.out.human() {
                for line in view.lines(&ctx.out, &entry.event) {
                    println!("{line}");
                }
            } else if !ctx.out.quiet {
                println!("{}", serde_json::to_string(entry).unwrap_or_default());
            }
        }
        let finished = page.status.is_some_and(DeploymentState::is_terminal);
        if page.next_after.is_none() && finished {
            return Ok(());
        }
        if page.next_after.is_none() {
            std::thread::sleep(FOLLOW_INTERVAL);
        }
    }
}
