//! `mode=live`: what the server says now, each probe within a deadline. A probe that cannot
//! reach the server adds a `sourceErrors` entry instead of failing the read.

use std::time::{Duration, Instant};

use berth_crds::health::{Check, ResourceHealth, SourceError};
use berth_crds::resource::Resource;
use berth_crds::server::{ProxyKind, Server};
use berth_remote::RemoteError;
use berth_remote::docker::{docker_call, docker_over_ssh};
use bollard::models::ContainerState;
use bollard::query_parameters::InspectContainerOptions;
use http_body_util::Empty;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::json;

use super::HealthQuery;
use crate::domain::containers::{choose, resource_containers};
use crate::domain::servers::server_connection;
use crate::domain::time::timestamp;
use crate::state::AppState;

/// The longest a live read waits for the server.
const PROBE_WITHIN: Duration = Duration::from_secs(10);
const ACTION: &str = "probe the resource";

pub fn now() -> String {
    timestamp(&Time(Timestamp::now()))
}

/// The runtime check as the controller last recorded it (`includeChecks`).
pub fn recorded_runtime_check(health: &ResourceHealth) -> Check {
    let runtime = &health.runtime;
    let status = match runtime.health.as_str() {
        "healthy" => "passed",
        "unknown" => "skipped",
        _ => "failed",
    };
    Check {
        name: "runtime-observed".into(),
        target: "runtime".into(),
        status: status.into(),
        observed_at: runtime.observed_at.clone().unwrap_or_else(now),
        duration_ms: None,
        status_code: None,
        exit_code: None,
        message: runtime.message.clone(),
        reason_code: runtime.reason_code.clone(),
        phase: Some("runtime".into()),
        retriable: status != "passed",
        metadata: json!({ "source": "server-observer", "lifecycle": runtime.lifecycle }),
    }
}

/// Runs the probes `query` asks for (none asked: both) and folds them into `health`.
pub async fn run(
    state: &AppState,
    resource: &Resource,
    server: Option<&Server>,
    query: &HealthQuery,
    health: &mut ResourceHealth,
) {
    let Some(server) = server else {
        health.source_errors.push(SourceError {
            retriable: false,
            ..SourceError::infra(
                "runtime",
                "server_not_assigned",
                "runtime-probe",
                "the resource has no server to probe".into(),
            )
        });
        return;
    };
    let both = !query.runtime_probe && !query.public_access_probe;
    let probe = async {
        let (connection, _lease) = server_connection(state, server, ACTION).await?;
        let mut checks = Vec::new();
        if query.runtime_probe || both {
            checks.push(runtime_probe(&connection, server, resource, health).await);
        }
        if (query.public_access_probe || both)
            && let Some(check) = public_access_probe(&connection, server, health).await
        {
            checks.push(check);
        }
        Ok::<_, crate::error::ApiError>(checks)
    };
    match tokio::time::timeout(PROBE_WITHIN, probe).await {
        Ok(Ok(checks)) => health.checks.extend(checks),
        Ok(Err(error)) => health.source_errors.push(SourceError::infra(
            "runtime",
            "server_unreachable",
            "runtime-probe",
            error.body.message.clone(),
        )),
        Err(_) => health.source_errors.push(SourceError::infra(
            "runtime",
            "probe_timeout",
            "runtime-probe",
            format!(
                "the server did not answer within {}s",
                PROBE_WITHIN.as_secs()
            ),
        )),
    }
}

/// The serving container as Docker reports it now.
async fn runtime_probe(
    connection: &std::sync::Arc<berth_remote::ServerConnection>,
    server: &Server,
    resource: &Resource,
    health: &ResourceHealth,
) -> Check {
    let mut check = Check {
        name: "runtime-container".into(),
        target: "runtime".into(),
        status: "skipped".into(),
        observed_at: now(),
        duration_ms: None,
        status_code: None,
        exit_code: None,
        message: "no deployment serves the resource".into(),
        reason_code: Some("not_deployed".into()),
        phase: Some("runtime".into()),
        retriable: false,
        metadata: json!({}),
    };
    let Some(deployment) = health.proxy.last_route_realization_deployment_id.clone() else {
        return check;
    };
    let started = Instant::now();
    let inspected = inspect_serving(connection, server, resource, &deployment).await;
    check.duration_ms = Some(started.elapsed().as_millis() as u64);
    check.metadata = json!({ "deploymentId": deployment });
    let (status, reason, message) = match inspected {
        Ok(Some(state)) => {
            check.exit_code = state.exit_code;
            verdict(&state)
        }
        Ok(None) => (
            "failed",
            "container_missing",
            "the serving container is gone from the server".into(),
        ),
        Err(error) => (
            "failed",
            "docker_error",
            format!("Docker did not answer: {error}"),
        ),
    };
    // Stopped on request: a container that does not run is what was asked for.
    let (status, reason) = match (status, health.runtime.lifecycle.as_str()) {
        ("failed", "stopped") if reason == "container_exited" => ("skipped", "stopped_on_request"),
        other => (other.0, reason),
    };
    check.status = status.into();
    check.reason_code = (status != "passed").then(|| reason.to_string());
    check.message = message;
    check.retriable = status != "passed";
    check
}

/// The state of attempt `deployment`'s container, `None` when the server has none.
async fn inspect_serving(
    connection: &std::sync::Arc<berth_remote::ServerConnection>,
    server: &Server,
    resource: &Resource,
    deployment: &str,
) -> Result<Option<ContainerState>, RemoteError> {
    let namespace = resource.namespace().unwrap_or_default();
    let docker = docker_over_ssh(connection.clone(), &server.spec.docker_socket_path);
    let candidates =
        resource_containers(connection, &docker, &namespace, &resource.name_any()).await?;
    let Some(container) = choose(&candidates, Some(deployment), None) else {
        return Ok(None);
    };
    let inspected = docker_call(
        connection,
        "inspecting a container",
        docker.inspect_container(&container.id, None::<InspectContainerOptions>),
    )
    .await;
    match inspected {
        Ok(container) => Ok(Some(container.state.unwrap_or_default())),
        Err(error) if berth_remote::docker::is_not_found(&error) => Ok(None),
        Err(error) => Err(error),
    }
}

/// A container's state as a check sees it: status, reason code, message.
fn verdict(state: &ContainerState) -> (&'static str, &'static str, String) {
    let running = state.running.unwrap_or(false);
    let failing = state
        .health
        .as_ref()
        .and_then(|h| h.status)
        .is_some_and(|s| s.to_string() == "unhealthy");
    match (running, failing) {
        (true, false) => ("passed", "", "the container runs".into()),
        (true, true) => (
            "failed",
            "health_check_failing",
            "the container runs but its health check fails".into(),
        ),
        (false, _) => (
            "failed",
            "container_exited",
            format!(
                "the container is stopped (exit code {})",
                state.exit_code.unwrap_or_default()
            ),
        ),
    }
}

/// One request through the server's edge proxy, as a visitor's would arrive (hostname, path
/// prefix). `None` when the resource has no route through the proxy.
async fn public_access_probe(
    connection: &berth_remote::ServerConnection,
    server: &Server,
    health: &ResourceHealth,
) -> Option<Check> {
    let intent = health.public_access.route_intent_status.as_ref()?;
    if server.spec.proxy.kind == ProxyKind::None {
        return None;
    }
    let port = u16::try_from(server.spec.proxy.http_port).ok()?;
    let request = http::Request::get(intent.intent.path_prefix.as_str())
        .header(http::header::HOST, intent.intent.host.as_str())
        .header("user-agent", "berth-health-probe")
        .body(Empty::<bytes::Bytes>::new())
        .ok()?;
    let started = Instant::now();
    let answer = connection.send_http_tcp("127.0.0.1", port, request).await;
    let mut check = Check {
        name: "public-access".into(),
        target: "public-access".into(),
        status: "failed".into(),
        observed_at: now(),
        duration_ms: Some(started.elapsed().as_millis() as u64),
        status_code: None,
        exit_code: None,
        message: String::new(),
        reason_code: None,
        phase: Some("edge-request-routing".into()),
        retriable: true,
        metadata: json!({ "url": health.public_access.url }),
    };
    match answer {
        Ok((status, _)) => {
            check.status_code = Some(status.as_u16());
            // The edge answers 502/503/504 when the upstream is down, and 404 without a route.
            let served = !(status.is_server_error() || status == http::StatusCode::NOT_FOUND);
            check.status = if served {
                "passed".into()
            } else {
                "failed".into()
            };
            check.retriable = !served;
            check.message = format!("the edge proxy answered {status}");
            check.reason_code = (!served).then(|| "edge_did_not_serve".to_string());
        }
        Err(error) => {
            check.message = format!("the edge proxy did not answer: {error}");
            check.reason_code = Some("edge_unreachable".into());
        }
    }
    Some(check)
}
