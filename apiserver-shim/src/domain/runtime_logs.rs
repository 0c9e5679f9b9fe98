//! Reading a Resource's runtime logs: finding its container through the server's connection,
//! then reading its lines, masked (the runtime-logs route and the diagnostic summary).

pub mod lines;

use std::time::Duration;

use berth_crds::resource::Resource;
use berth_remote::RemoteError;
use berth_remote::docker::{docker_over_ssh, is_not_found};
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use futures::{Stream, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::auth::Caller;
use crate::domain::containers::{choose, resource_containers};
use crate::domain::objects::{find_deployment, find_in, object_name};
use crate::domain::resource_access::masker;
use crate::domain::servers::server_connection;
use crate::error::{ApiError, ApiResult};
use crate::services::server_access::{AccessLease, remote_error};
use crate::state::AppState;

pub use self::lines::{LineBuilder, LineContext, LogStream, RuntimeLogLine};

pub use berth_api::runtime_logs::RuntimeLogs;

/// How long a (non-follow) read may take before the server counts as unavailable.
const READ_WITHIN: Duration = Duration::from_secs(30);

/// What failures say the shim could not do.
const ACTION: &str = "read runtime logs";

/// The query, checked.
#[derive(Debug, PartialEq)]
pub struct LogQuery {
    pub tail_lines: u64,
    pub deployment_id: Option<String>,
    pub since: Option<Timestamp>,
    pub stdout: bool,
    pub stderr: bool,
    pub follow: bool,
}

/// Docker's `since` takes whole seconds; the builder drops what is at or before the instant.
pub fn docker_since(since: Option<Timestamp>) -> i32 {
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

/// The stream and bytes of one chunk of Docker output; stdin is never logged.
pub fn chunk(output: LogOutput) -> Option<(Option<LogStream>, impl AsRef<[u8]>)> {
    match output {
        LogOutput::StdOut { message } => Some((Some(LogStream::Stdout), message)),
        LogOutput::StdErr { message } => Some((Some(LogStream::Stderr), message)),
        LogOutput::Console { message } => Some((None, message)),
        LogOutput::StdIn { .. } => None,
    }
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
pub struct Located {
    pub docker: Docker,
    pub container_id: String,
    pub deployment_id: Option<String>,
    pub builder: LineBuilder,
    /// Keeps the server's connection open while the container is read.
    pub lease: AccessLease,
}

/// Finds the container `query` asks for: `None` when there is none to read, a 404 when the
/// attempt asked for is unknown.
pub async fn locate(
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
        lease,
    }))
}

fn unknown_deployment(query: &LogQuery) -> ApiError {
    ApiError::not_found(
        "deployment",
        query.deployment_id.as_deref().unwrap_or_default(),
    )
    .with_detail("field", "deploymentId")
}

pub fn log_stream(
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
pub async fn read(found: Located, query: &LogQuery) -> ApiResult<Vec<RuntimeLogLine>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_the_epoch_docker_reads_everything() {
        assert_eq!(docker_since(None), 0);
        assert_eq!(
            docker_since(Some("1960-01-01T00:00:00Z".parse().unwrap())),
            0
        );
    }
}
