//! Spec §4.7 `GET /resources/{resourceId}/runtime-logs`: what a resource's container wrote,
//! read through the Docker logs API over the shim's own SSH connection to the server, each line
//! masked with the secret values of the resource's configuration. `follow=true` turns the
//! answer into a live tail (`text/event-stream`, envelope of spec §6) that ends when the
//! container stops or the client goes away.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio::sync::mpsc;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::fields::bounded;
use crate::domain::resource_access::lookup;
use crate::domain::runtime_logs::{
    Located, LogQuery, RuntimeLogLine, RuntimeLogs, chunk, locate, log_stream, read,
};
use crate::domain::time::parse_utc;
use crate::error::ApiResult;
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::get::<RuntimeLogs, _, _>(
        "/resources/{resourceId}/runtime-logs",
        "What the resource's container wrote, secret values masked (query: tailLines 1..5000 \
         default 100, deploymentId (default: the serving attempt's container), since (UTC \
         date-time; a line's cursor reads on after it), stream stdout|stderr (default both), \
         follow=true for a live tail as text/event-stream: each event is `event: message`, an \
         increasing `id` and `data` holding one Runtime log line; it ends when the container \
         stops)",
        show,
    )]
}

/// `tailLines` bounds and default.
pub const TAIL_LINES: (u64, u64) = (1, 5_000);
const DEFAULT_TAIL_LINES: u64 = 100;
/// Lines buffered for a slow live-tail client before reading from Docker waits for it.
const BUFFER: usize = 64;

fn parse_query(query: &QueryParams) -> ApiResult<LogQuery> {
    known_params(
        query,
        &["tailLines", "deploymentId", "since", "stream", "follow"],
    )?;
    let (min, max) = TAIL_LINES;
    let tail_lines = query.integer("tailLines", min, max, DEFAULT_TAIL_LINES)?;
    let deployment_id = query.string("deploymentId")?.map(str::to_string);
    if let Some(id) = &deployment_id {
        bounded("deploymentId", id, 253)?;
    }
    let since = query
        .string("since")?
        .map(|v| parse_utc("since", v))
        .transpose()?;
    let stream = query.one_of("stream", &["stdout", "stderr"], None)?;
    Ok(LogQuery {
        tail_lines,
        deployment_id,
        since,
        stdout: stream != Some("stderr"),
        stderr: stream != Some("stdout"),
        follow: query.boolean("follow")?,
    })
}

/// One SSE event of spec §6 holding a log line.
fn sse_event(line: &RuntimeLogLine) -> Event {
    let id = line.sequence.to_string();
    Event::default()
        .event("message")
        .id(id.clone())
        .json_data(berth_api::wire::Wire(line))
        .unwrap_or_else(|_| Event::default().event("message").id(id))
}

/// An answer with no lines: a JSON body, or for `follow` a stream that ends at once.
fn nothing(resource_id: String, deployment_id: Option<String>, follow: bool) -> Response {
    if follow {
        let events = futures::stream::empty::<Result<Event, Infallible>>();
        return Sse::new(events).into_response();
    }
    Json(RuntimeLogs {
        resource_id,
        deployment_id,
        logs: Vec::new(),
    })
    .into_response()
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Response> {
    let query = parse_query(&query)?;
    let resource = lookup(&state, &caller, &id)?;
    let Some(found) = locate(&state, &caller, &resource, &query).await? else {
        return Ok(nothing(id, query.deployment_id, query.follow));
    };
    let deployment_id = found.deployment_id.clone();
    if query.follow {
        let (sender, receiver) = mpsc::channel(BUFFER);
        tokio::spawn(follow(found, query, sender));
        let events = futures::stream::unfold(receiver, |mut receiver| async move {
            let event = receiver.recv().await?;
            Some((Ok::<_, Infallible>(event), receiver))
        });
        return Ok(Sse::new(events)
            .keep_alive(KeepAlive::default())
            .into_response());
    }
    let logs = read(found, &query).await?;
    Ok(Json(RuntimeLogs {
        resource_id: id,
        deployment_id,
        logs,
    })
    .into_response())
}

/// Sends the tail, then each new line, until the container stops (Docker ends the stream), the
/// client goes away (the receiver is dropped) or the connection fails. Holds the connection's
/// lease meanwhile.
async fn follow(found: Located, query: LogQuery, sender: mpsc::Sender<Event>) {
    let Located {
        docker,
        container_id,
        mut builder,
        lease: _lease,
        ..
    } = found;
    let output = log_stream(&docker, &container_id, &query);
    futures::pin_mut!(output);
    loop {
        let item = tokio::select! {
            _ = sender.closed() => return,
            item = output.next() => item,
        };
        let output = match item {
            None => return,
            Some(Ok(output)) => output,
            Some(Err(error)) => {
                tracing::warn!(%error, container = %container_id, "live tail ended");
                return;
            }
        };
        let Some((stream, bytes)) = chunk(output) else {
            continue;
        };
        for line in builder.lines(stream, bytes.as_ref()) {
            if sender.send(sse_event(&line)).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::runtime_logs::docker_since;

    fn query(pairs: &[(&str, &str)]) -> ApiResult<LogQuery> {
        parse_query(&QueryParams::from_pairs(pairs))
    }

    fn field(result: ApiResult<LogQuery>) -> String {
        let error = result.unwrap_err();
        assert_eq!(error.status, 422);
        error.body.details["field"].as_str().unwrap().to_string()
    }

    #[test]
    fn defaults_read_the_last_hundred_lines_of_both_streams() {
        let parsed = query(&[]).unwrap();
        assert_eq!(
            parsed,
            LogQuery {
                tail_lines: 100,
                deployment_id: None,
                since: None,
                stdout: true,
                stderr: true,
                follow: false,
            }
        );
    }

    #[test]
    fn tail_lines_stay_within_their_range() {
        for bad in ["0", "5001", "-1", "many", ""] {
            let error = query(&[("tailLines", bad)]).unwrap_err();
            assert_eq!(error.body.details["field"], "tailLines", "{bad}");
            assert_eq!(error.body.details["min"], 1);
            assert_eq!(error.body.details["max"], 5000);
            assert!(
                error.body.message.contains("1 to 5000"),
                "{}",
                error.body.message
            );
        }
        assert_eq!(query(&[("tailLines", "5000")]).unwrap().tail_lines, 5000);
        assert_eq!(query(&[("tailLines", "1")]).unwrap().tail_lines, 1);
    }

    #[test]
    fn other_parameters_are_checked_and_named() {
        let parsed = query(&[
            ("stream", "stderr"),
            ("follow", "true"),
            ("deploymentId", "dep-web-2"),
            ("since", "2030-01-01T00:00:00.5Z"),
        ])
        .unwrap();
        assert!(!parsed.stdout && parsed.stderr && parsed.follow);
        assert_eq!(parsed.deployment_id.as_deref(), Some("dep-web-2"));
        assert_eq!(docker_since(parsed.since), 1_893_456_000);
        assert!(!query(&[("stream", "stdout")]).unwrap().stderr);
        assert_eq!(field(query(&[("stream", "both")])), "stream");
        assert_eq!(field(query(&[("follow", "yes")])), "follow");
        assert_eq!(field(query(&[("since", "yesterday")])), "since");
        assert_eq!(
            field(query(&[("since", "2030-01-01T00:00:00+02:00")])),
            "since"
        );
        assert_eq!(field(query(&[("deploymentId", "")])), "deploymentId");
        assert_eq!(field(query(&[("tail", "5")])), "tail");
    }
}
