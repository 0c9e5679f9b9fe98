//! Spec §4.7 `GET /resources/{resourceId}/runtime-logs`: what a resource's container wrote,
//! read through the Docker logs API over the shim's own SSH connection to the server, each line
//! masked with the secret values of the resource's configuration. `follow=true` turns the
//! answer into a live tail (`text/event-stream`, envelope of spec §6) that ends when the
//! container stops or the client goes away.

pub(crate) mod container;
mod lines;

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use berth_crds::resource::Resource;
use berth_remote::RemoteError;
use berth_remote::docker::{docker_over_ssh, is_not_found};
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use futures::{Stream, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::mpsc;

use self::container::{choose, resource_containers};
use super::Endpoint;
use crate::auth::Caller;
use crate::domain::fields::bounded;
use crate::domain::objects::{find_deployment, find_in, object_name};
use crate::domain::resource_access::{lookup, masker};
use crate::domain::servers::server_connection;
use crate::domain::time::parse_utc;
use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::services::server_access::{AccessLease, remote_error};
use crate::state::AppState;

pub use self::lines::{LineBuilder, LineContext, LogStream, RuntimeLogLine};

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
/// How long a (non-follow) read may take before the server counts as unavailable.
const READ_WITHIN: Duration = Duration::from_secs(30);
/// Lines buffered for a slow live-tail client before reading from Docker waits for it.
const BUFFER: usize = 64;
/// What failures say the shim could not do.
const ACTION: &str = "read runtime logs";

/// The answer of spec §4.7.
#[derive(Serialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeLogs {
    pub resource_id: String,
    /// The attempt whose container was read; absent when there is no container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    /// Oldest first.
    pub logs: Vec<RuntimeLogLine>,
}

/// The query, checked.
#[derive(Debug, PartialEq)]
struct LogQuery {
    tail_lines: u64,
    deployment_id: Option<String>,
    since: Option<Timestamp>,
    stdout: bool,
    stderr: bool,
    follow: bool,
}

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

/// Docker's `since` takes whole seconds; the builder drops what is at or before the instant.
fn docker_since(since: Option<Timestamp>) -> i32 {
    since.map_or(0, |s| {
        i32::try_from(s.as_second().max(0)).unwrap_or(i32::MAX)
    })
}

/// The resource's service, when it names one: the network profile's target, or its only one.
fn service_name(resource: &Resource) -> Option<String> {
    let spec = &resource.spec;
    spec.network_profile
        .as_ref()
        .and_then(|n| n.target_service_name.clone())
        .or_else(|| match spec.services.as_slice() {
            [only] => Some(only.name.clone()),
            _ => None,
        })
}

fn docker_error(source: bollard::errors::Error) -> RemoteError {
    RemoteError::Docker {
        operation: "reading container logs",
        source,
    }
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

/// The stream and bytes of one chunk of Docker output; stdin is never logged.
fn chunk(output: LogOutput) -> Option<(Option<LogStream>, impl AsRef<[u8]>)> {
    match output {
        LogOutput::StdOut { message } => Some((Some(LogStream::Stdout), message)),
        LogOutput::StdErr { message } => Some((Some(LogStream::Stderr), message)),
        LogOutput::Console { message } => Some((None, message)),
        LogOutput::StdIn { .. } => None,
    }
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

/// The last `tail_lines` lines of the resource's container (`deployment_id`'s, else the
/// serving attempt's), masked; none when nothing runs. For the diagnostic summary.
pub async fn tail(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    deployment_id: Option<String>,
    tail_lines: u64,
) -> ApiResult<RuntimeLogs> {
    let query = LogQuery {
        tail_lines,
        deployment_id,
        since: None,
        stdout: true,
        stderr: true,
        follow: false,
    };
    let resource_id = resource.name_any();
    let Some(found) = locate(state, caller, resource, &query).await? else {
        return Ok(RuntimeLogs {
            resource_id,
            deployment_id: query.deployment_id,
            logs: Vec::new(),
        });
    };
    let deployment_id = found.deployment_id.clone();
    let logs = read(found, &query).await?;
    Ok(RuntimeLogs {
        resource_id,
        deployment_id,
        logs,
    })
}

/// The container a query reads, reached through the server's connection (held by `lease`).
struct Located {
    docker: Docker,
    container_id: String,
    deployment_id: Option<String>,
    builder: LineBuilder,
    _lease: AccessLease,
}

/// Finds the container `query` asks for: `None` when there is none to read, a 404 when the
/// attempt asked for is unknown.
async fn locate(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    query: &LogQuery,
) -> ApiResult<Option<Located>> {
    if query
        .deployment_id
        .as_deref()
        .is_some_and(|d| !object_name(d))
    {
        return Err(unknown_deployment(query));
    }
    let id = resource.name_any();
    let namespace = resource.namespace().unwrap_or_default();
    let serving = resource
        .status
        .as_ref()
        .and_then(|s| s.last_route_realization_deployment_id.clone());
    // The attempt's own server: a resource moved to another server keeps older containers
    // where they ran.
    let attempt = match query.deployment_id.as_ref().or(serving.as_ref()) {
        Some(name) => find_deployment(state, &namespace, name)
            .await?
            .filter(|d| d.spec.resource_id == id),
        None => None,
    };
    let unknown_attempt = query.deployment_id.is_some() && attempt.is_none();
    let server_id = attempt
        .as_ref()
        .map(|d| d.spec.server_id.clone())
        .or_else(|| resource.spec.server_id.clone());
    let server =
        server_id.and_then(|s| find_in(&state.caches.servers, &namespace, &s, "server").ok());
    let none = || {
        if unknown_attempt {
            Err(unknown_deployment(query))
        } else {
            Ok(None)
        }
    };
    let Some(server) = server else {
        return none();
    };
    let (connection, lease) = server_connection(state, &server, ACTION).await?;
    let docker = docker_over_ssh(connection.clone(), &server.spec.docker_socket_path);
    let candidates = resource_containers(&connection, &docker, &namespace, &id)
        .await
        .map_err(|error| remote_error(ACTION, error))?;
    let Some(container) = choose(
        &candidates,
        query.deployment_id.as_deref(),
        serving.as_deref(),
    ) else {
        return none();
    };
    let builder = LineBuilder::new(
        LineContext {
            resource_id: id,
            deployment_id: container.deployment_id.clone(),
            service_name: service_name(resource),
            container_id: container.id.clone(),
        },
        masker(state, caller, resource).await?,
        query.since,
    );
    Ok(Some(Located {
        docker,
        container_id: container.id.clone(),
        deployment_id: container.deployment_id.clone(),
        builder,
        _lease: lease,
    }))
}

fn unknown_deployment(query: &LogQuery) -> ApiError {
    ApiError::not_found(
        "deployment",
        query.deployment_id.as_deref().unwrap_or_default(),
    )
    .with_detail("field", "deploymentId")
}

fn log_stream(
    docker: &Docker,
    container_id: &str,
    query: &LogQuery,
) -> impl Stream<Item = Result<LogOutput, bollard::errors::Error>> + use<> {
    let options = LogsOptionsBuilder::new()
        .stdout(query.stdout)
        .stderr(query.stderr)
        .timestamps(true)
        .tail(&query.tail_lines.to_string())
        .since(docker_since(query.since))
        .follow(query.follow)
        .build();
    docker.logs(container_id, Some(options))
}

/// The tail, read to its end within [`READ_WITHIN`]. A container removed meanwhile has none.
async fn read(found: Located, query: &LogQuery) -> ApiResult<Vec<RuntimeLogLine>> {
    let Located {
        docker,
        container_id,
        mut builder,
        ..
    } = found;
    let output = log_stream(&docker, &container_id, query);
    let collect = async {
        futures::pin_mut!(output);
        let mut lines = Vec::new();
        while let Some(item) = output.next().await {
            if let Some((stream, bytes)) = chunk(item.map_err(docker_error)?) {
                lines.extend(builder.lines(stream, bytes.as_ref()));
            }
        }
        Ok::<_, RemoteError>(lines)
    };
    match tokio::time::timeout(READ_WITHIN, collect).await {
        Ok(Ok(lines)) => Ok(lines),
        Ok(Err(error)) if is_not_found(&error) => Ok(Vec::new()),
        Ok(Err(error)) => Err(remote_error(ACTION, error)),
        Err(_) => Err(ApiError::unavailable(format!(
            "cannot {ACTION}: the server did not send them within {} s",
            READ_WITHIN.as_secs()
        ))),
    }
}

/// Sends the tail, then each new line, until the container stops (Docker ends the stream), the
/// client goes away (the receiver is dropped) or the connection fails. Holds the connection's
/// lease meanwhile.
async fn follow(found: Located, query: LogQuery, sender: mpsc::Sender<Event>) {
    let Located {
        docker,
        container_id,
        mut builder,
        _lease,
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

    #[test]
    fn only_object_names_can_name_a_deployment() {
        assert!(object_name("dep-web-m1x") && object_name("dep-a.b-2"));
        assert!(!object_name("../dep") && !object_name("Dep-1") && !object_name("a/b"));
    }

    #[test]
    fn before_the_epoch_docker_reads_everything() {
        assert_eq!(docker_since(None), 0);
        assert_eq!(
            docker_since(Some("1960-01-01T00:00:00Z".parse().unwrap())),
            0
        );
    }
}
