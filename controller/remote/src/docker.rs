//! The Docker API of a server, reached through the SSH connection: bollard with a custom
//! transport that carries each request over its own `direct-streamlocal` channel to the remote
//! Docker socket (DESIGN §4). No `docker` or `ssh` binary is involved.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::{NAMESPACE_LABEL, RESOURCE_LABEL};
use bollard::models::ContainerSummary;
use bollard::query_parameters::ListContainersOptionsBuilder;
use bollard::{API_DEFAULT_VERSION, BollardRequest, Docker};
use http::header::{HOST, HeaderValue};
use http::uri::Uri;

use super::connection::ServerConnection;
use super::error::{RemoteError, within};

/// A bollard client whose requests go over `connection` to `socket_path` on the server.
pub fn docker_over_ssh(connection: Arc<ServerConnection>, socket_path: &str) -> Docker {
    let deadline = connection.timeouts().request;
    docker_over_ssh_within(connection, socket_path, deadline)
}

/// The same client, waiting up to `deadline` for each response's headers: image builds upload
/// their context in the request body, and Docker answers only once it has read all of it.
/// The request body streams (hyper sends it chunked), so a large context is never held whole.
pub fn docker_over_ssh_within(
    connection: Arc<ServerConnection>,
    socket_path: &str,
    deadline: Duration,
) -> Docker {
    let socket_path = socket_path.to_string();
    let transport = move |request: BollardRequest| {
        let connection = connection.clone();
        let socket_path = socket_path.clone();
        async move {
            let request = to_origin_form(request)?;
            connection
                .send_http_within(&socket_path, request, deadline)
                .await
                .map_err(|error| bollard::errors::Error::IOError {
                    err: std::io::Error::other(error.to_string()),
                })
        }
    };
    // bollard puts the scheme and host into the URI; `to_origin_form` strips them again.
    Docker::connect_with_custom_transport(
        transport,
        Some("berth://docker"),
        deadline.as_secs().max(1),
        API_DEFAULT_VERSION,
    )
    .expect("a custom transport needs no I/O to set up")
}

/// Docker answers 400 to an absolute-form request line or one without `Host`: send the path
/// and query only, with a `Host` header.
fn to_origin_form(mut request: BollardRequest) -> Result<BollardRequest, bollard::errors::Error> {
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    *request.uri_mut() = path
        .parse::<Uri>()
        .map_err(|e| bollard::errors::Error::HttpClientError { err: e.into() })?;
    request
        .headers_mut()
        .insert(HOST, HeaderValue::from_static("docker"));
    Ok(request)
}

/// Runs one Docker API call with the connection's request deadline, so a hung body read cannot
/// stall a reconcile.
pub async fn docker_call<T>(
    connection: &ServerConnection,
    operation: &'static str,
    call: impl Future<Output = Result<T, bollard::errors::Error>>,
) -> Result<T, RemoteError> {
    within(connection.timeouts().request, operation, async {
        call.await
            .map_err(|source| RemoteError::Docker { operation, source })
    })
    .await
}

/// Every container, running or not, labelled as the resource's (in its namespace) on the server
/// `docker` reaches: what the controller retires and cleans up, and what the shim reads logs of.
pub async fn resource_containers(
    connection: &ServerConnection,
    docker: &Docker,
    namespace: &str,
    resource: &str,
) -> Result<Vec<ContainerSummary>, RemoteError> {
    let filters = HashMap::from([(
        "label".to_string(),
        vec![
            format!("{NAMESPACE_LABEL}={namespace}"),
            format!("{RESOURCE_LABEL}={resource}"),
        ],
    )]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    docker_call(
        connection,
        "listing containers",
        docker.list_containers(Some(options)),
    )
    .await
}

/// Whether a Docker error is a 404 (no such container, network or image).
pub fn is_not_found(error: &RemoteError) -> bool {
    docker_status(error) == Some(404)
}

/// Whether Docker refused a call because the name is taken (409).
pub fn is_conflict(error: &RemoteError) -> bool {
    docker_status(error) == Some(409)
}

/// Whether Docker answered that nothing changed (304: a container already stopped or started).
pub fn is_not_modified(error: &RemoteError) -> bool {
    docker_status(error) == Some(304)
}

/// Whether Docker refused to connect a container to a network it is on already (403).
pub fn is_already_on_network(error: &RemoteError) -> bool {
    error.to_string().contains("already exists")
}

/// Whether Docker refused to disconnect a container from a network it is not on (403 or 500,
/// depending on the version and on whether the container runs): the state asked for holds.
pub fn is_not_on_network(error: &RemoteError) -> bool {
    is_not_found(error) || error.to_string().contains("is not connected")
}

fn docker_status(error: &RemoteError) -> Option<u16> {
    match error {
        RemoteError::Docker {
            source: bollard::errors::Error::DockerResponseServerError { status_code, .. },
            ..
        } => Some(*status_code),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_rewritten_to_origin_form_with_a_host() {
        let request = http::Request::builder()
            .uri("berth://docker/containers/json?all=true")
            .body(http_body_util::Either::Left(http_body_util::Full::new(
                bytes::Bytes::new(),
            )))
            .unwrap();
        let request = to_origin_form(request).unwrap();
        assert_eq!(request.uri().to_string(), "/containers/json?all=true");
        assert_eq!(request.headers()[HOST], "docker");
    }
}
