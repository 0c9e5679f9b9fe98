//! `berth events` (the change feed, followed as it happens) and `berth audit` (who changed
//! what, newest first).

use berth_api::activity::{AuditEventList, ChangeEvent, FeedEnvelope};
use reqwest::Method;
use serde_json::Value;

use super::find_resource;
use super::{Ctx, read_as};
use crate::error::{CliError, CliResult};
use crate::output::{Column, col, items};

const AUDIT_COLUMNS: &[Column] = &[
    col("WHEN", "/createdAt"),
    col("ACTOR", "/actor/id"),
    col("KIND", "/aggregateKind"),
    col("OBJECT", "/aggregateId"),
    col("EVENT", "/eventType"),
    col("SUMMARY", "/summary"),
];

/// How many times `events` reconnects in a row after the stream broke before it gives up.
const RECONNECTS: u32 = 5;

/// What `berth events` follows.
pub struct EventsOptions {
    pub resource: Option<String>,
    pub kinds: Vec<String>,
    pub after: Option<String>,
    /// Stop after this many changes (default: follow until interrupted).
    pub count: Option<u64>,
}

/// Prints each change of the organization's objects as the shim sees it, resuming after the
/// last one seen when the connection breaks.
pub fn events(ctx: &Ctx, options: EventsOptions) -> CliResult<()> {
    let mut query = Vec::new();
    if let Some(resource) = &options.resource {
        query.push(("resourceId", find_resource(ctx, resource)?.id));
    }
    if !options.kinds.is_empty() {
        query.push(("kind", options.kinds.join(",")));
    }
    let mut printed = 0u64;
    let resume_hint = "run berth events --after ID to resume";
    follow_changes(
        ctx,
        &query,
        options.after.clone(),
        resume_hint,
        |event, data| match event {
            FeedEnvelope::Change { change, .. } => {
                print_change(ctx, change, data);
                printed += 1;
                Ok(options.count.is_none_or(|count| printed < count))
            }
            FeedEnvelope::Resync { reason, .. } => {
                if ctx.out.human() {
                    eprintln!("note: {reason}");
                } else if !ctx.out.quiet {
                    println!("{data}");
                }
                Ok(true)
            }
        },
    )
}

fn print_change(ctx: &Ctx, change: &ChangeEvent, data: &str) {
    if ctx.out.quiet {
        println!("{}", change.object_id);
    } else if ctx.out.human() {
        let status = change.status.as_deref().unwrap_or("-");
        let kind = change.kind.as_str();
        let change_type = serde_json::to_value(change.change_type)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        println!(
            "{}  {kind:<14} {:<28} {change_type:<8} {status:<12} {}",
            change.occurred_at, change.object_id, change.summary
        );
    } else {
        println!("{data}");
    }
}

/// Follows the change feed (`query`: its filters) from `after`, handing each event and its
/// JSON to `on_event` until it answers `false`; a broken connection resumes after the last
/// event seen, and gives up (saying `resume_hint`) when it keeps breaking.
pub fn follow_changes(
    ctx: &Ctx,
    query: &[(&str, String)],
    mut after: Option<String>,
    resume_hint: &str,
    mut on_event: impl FnMut(&FeedEnvelope, &str) -> CliResult<bool>,
) -> CliResult<()> {
    let mut reconnects = 0;
    loop {
        let mut with_position = query.to_vec();
        if let Some(after) = &after {
            with_position.push(("after", after.clone()));
        }
        let stream =
            ctx.api()?
                .stream(Method::GET, "/events/stream", &with_position, None::<&()>)?;
        for data in stream {
            let Ok(data) = data else { break };
            reconnects = 0;
            let envelope: FeedEnvelope = read_as(
                "change event",
                &serde_json::from_str(&data).unwrap_or(Value::Null),
            )?;
            after = Some(match &envelope {
                FeedEnvelope::Change { change, .. } => change.event_id.clone(),
                FeedEnvelope::Resync { event_id, .. } => event_id.clone(),
            });
            if !on_event(&envelope, &data)? {
                return Ok(());
            }
        }
        reconnects += 1;
        if reconnects > RECONNECTS {
            return Err(CliError::failure(format!(
                "the change feed kept breaking; {resume_hint}"
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// What `berth audit` lists.
pub struct AuditOptions {
    pub resource: Option<String>,
    pub object: Option<String>,
    pub limit: Option<u32>,
    pub all: bool,
}

pub fn audit(ctx: &Ctx, options: AuditOptions) -> CliResult<()> {
    let mut query = Vec::new();
    if let Some(resource) = &options.resource {
        query.push(("resourceId", find_resource(ctx, resource)?.id));
    }
    if let Some(object) = &options.object {
        query.push(("aggregateId", object.clone()));
    }
    if let Some(limit) = options.limit {
        query.push(("limit", limit.to_string()));
    }
    let api = ctx.api()?;
    let mut answer = api.get::<AuditEventList>("/audit-events", &query)?;
    let mut rows = items(&answer.raw, "/items");
    while options.all
        && let Some(cursor) = answer.value.next_cursor.clone()
    {
        let mut next = query.clone();
        next.push(("cursor", cursor));
        answer = api.get("/audit-events", &next)?;
        rows.extend(items(&answer.raw, "/items"));
    }
    let mut answer = answer.raw;
    if options.all
        && let Some(object) = answer.as_object_mut()
    {
        object.insert("items".into(), Value::Array(rows.clone()));
        object.remove("nextCursor");
    }
    ctx.out.list(&answer, &rows, AUDIT_COLUMNS, "/auditEventId");
    Ok(())
}
