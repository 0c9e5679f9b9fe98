//! The observer's second follower: the edge proxy's access log, which holds only requests the
//! proxy could not serve (see `berth_remote::edge_failures`), read through the Docker logs API
//! over the server's SSH connection as it is written. Each failure becomes access-failure
//! evidence in the observation store (spec §2.2), found later by its request id. Like the events
//! follower, it reconnects with backoff when the stream breaks or the proxy is recreated, and
//! picks up from the last second it read, so a failure is recorded once even when read twice.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::access_failure::{
    AccessFailureEvidence, AccessRoute, AffectedRequest, GENERATED_ROUTE_SOURCE, NO_ROUTE_FOR_PATH,
    PATH_NOT_FOUND, ROUTE_NOT_FOUND, SCHEMA_VERSION, reason,
};
use berth_crds::resource::Resource;
use berth_crds::server::Server;
use berth_observations::{AccessFailureRecord, now_ms};
use berth_remote::docker::docker_over_ssh_within;
use berth_remote::edge_failures::{EdgeFailure, parse_failure_line};
use berth_remote::{EdgeProxyNames, ServerId};
use bollard::container::LogOutput;
use bollard::query_parameters::LogsOptionsBuilder;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::ObjectRef;

use super::events::backoff;
use crate::context::Context;
use crate::observer::ObservedServer;
use crate::routes::route;
use crate::server_connections::server_connection;

/// How far back the first read of a log goes: failures logged while no controller ran.
const REPLAY_ON_START: Duration = Duration::from_secs(3600);

pub async fn follow_access_log(context: Arc<Context>, id: ServerId, observed: Arc<ObservedServer>) {
    let mut since = unix_seconds(now_ms()) - REPLAY_ON_START.as_secs() as i64;
    let mut failures = 0u32;
    loop {
        match follow(&context, &id, &mut since).await {
            Ok(()) => failures = 0,
            Err(error) => {
                failures = failures.saturating_add(1);
                tracing::debug!(server = %id, %error, "not following the edge proxy's log; retrying");
            }
        }
        // A (re)started proxy is followed at once; otherwise wait out the backoff.
        tokio::select! {
            _ = tokio::time::sleep(backoff(failures)) => {}
            _ = observed.proxy_restarted() => {}
        }
    }
}

/// One read of the log, from `since` until the stream ends (the proxy stopped) or breaks.
async fn follow(context: &Context, id: &ServerId, since: &mut i64) -> Result<(), String> {
    let (server, connection) = server_connection(context, &id.namespace, &id.name)
        .await
        .map_err(|e| e.to_string())?;
    let socket = server.spec.docker_socket_path.clone();
    // A followed log never ends by itself: only the response headers have a deadline.
    let docker = docker_over_ssh_within(connection.clone(), &socket, connection.timeouts().request);
    let options = LogsOptionsBuilder::new()
        .follow(true)
        .stdout(true)
        .stderr(false)
        .since(i32::try_from(*since).unwrap_or(0))
        .build();
    let container = EdgeProxyNames::for_server(id).container;
    let mut lines = docker.logs(&container, Some(options));
    while let Some(output) = lines.next().await {
        let message = match output.map_err(|e| e.to_string())? {
            LogOutput::StdOut { message } | LogOutput::Console { message } => message,
            _ => continue,
        };
        for line in String::from_utf8_lossy(&message).lines() {
            if let Some(failure) = parse_failure_line(line) {
                *since = (*since).max(unix_seconds(failure.at_ms));
                record(context, id, &server, failure).await;
            }
        }
    }
    Ok(())
}

fn unix_seconds(ms: i64) -> i64 {
    ms.div_euclid(1000)
}

/// Stores one failure's evidence; a store that fails loses it, with a warning.
async fn record(context: &Context, id: &ServerId, server: &Server, failure: EdgeFailure) {
    let Some(store) = context.observations.store() else {
        return;
    };
    let resource = failure.resource.as_ref().and_then(|name| {
        let key = ObjectRef::new(name).within(&id.namespace);
        context.caches.resources.get(&key)
    });
    let evidence = evidence(&failure, id, server, resource.as_deref());
    let record = AccessFailureRecord::captured(
        &id.namespace,
        &id.name,
        failure.resource.clone(),
        now_ms(),
        evidence,
    );
    // Evidence past its `expiresAt` goes when new evidence comes: no sweep runs while idle.
    let stored = tokio::task::spawn_blocking(move || {
        store.record_access_failure(&record)?;
        store.prune_access_failures(record.captured_at_ms)
    })
    .await;
    match stored {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            tracing::warn!(server = %id, %error, "could not record access-failure evidence")
        }
        Err(error) => {
            tracing::warn!(server = %id, %error, "recording access-failure evidence stopped")
        }
    }
}

/// The evidence of `failure` on `server`: what the edge answered, and what the controller knows
/// of the route that took it (`resource`, as cached now).
pub fn evidence(
    failure: &EdgeFailure,
    id: &ServerId,
    server: &Server,
    resource: Option<&Resource>,
) -> AccessFailureEvidence {
    let reason = reason(&failure.code);
    let text = |pick: fn(&berth_crds::access_failure::Reason) -> &'static str| {
        reason.as_ref().map_or("unknown", pick).to_string()
    };
    let port = server.spec.proxy.http_port;
    let authority = if port == 80 {
        failure.hostname.clone()
    } else {
        format!("{}:{port}", failure.hostname)
    };
    AccessFailureEvidence {
        schema_version: SCHEMA_VERSION.into(),
        request_id: failure.request_id.clone(),
        generated_at: Timestamp::from_millisecond(failure.at_ms)
            .map(|t| t.to_string())
            .unwrap_or_default(),
        code: reason.map_or_else(|| failure.code.clone(), |r| r.code.to_string()),
        category: text(|r| r.category),
        phase: text(|r| r.phase),
        http_status: failure.status,
        retriable: reason.is_some_and(|r| r.retriable),
        owner_hint: text(|r| r.owner_hint),
        next_action: text(|r| r.next_action),
        affected: AffectedRequest {
            url: format!("http://{authority}{}", failure.path),
            hostname: failure.hostname.clone(),
            path: failure.path.clone(),
            method: failure.method.clone(),
        },
        route: failure
            .resource
            .as_ref()
            .map(|name| route_of(name, failure, id, server, resource)),
        cause_code: Some(cause_code(&failure.code, failure.status).into()),
        correlation_id: Some(failure.request_id.clone()),
        causation_id: None,
    }
}

fn route_of(
    name: &str,
    failure: &EdgeFailure,
    id: &ServerId,
    server: &Server,
    resource: Option<&Resource>,
) -> AccessRoute {
    let planned = resource.and_then(|r| route(r, server));
    let status = resource.and_then(|r| r.status.as_ref());
    let deployment = status.and_then(|s| {
        s.runtime
            .as_ref()
            .and_then(|r| r.deployment_id.clone())
            .or_else(|| s.last_route_realization_deployment_id.clone())
    });
    let route_status = status
        .and_then(|s| s.proxy_route_status)
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|v| v.as_str().map(str::to_string));
    AccessRoute {
        host: Some(
            planned
                .as_ref()
                .map_or(failure.hostname.clone(), |p| p.hostname.clone()),
        ),
        path_prefix: planned.as_ref().map(|p| p.path_prefix.clone()),
        resource_id: Some(name.to_string()),
        deployment_id: deployment,
        server_id: Some(id.name.clone()),
        destination_id: resource.and_then(|r| r.spec.destination_id.clone()),
        provider_key: Some("caddy".into()),
        route_id: planned.map(|p| p.id),
        route_source: Some(GENERATED_ROUTE_SOURCE.into()),
        route_status,
        ..AccessRoute::default()
    }
}

/// What went wrong underneath, from the code and the status the edge answered with.
fn cause_code(code: &str, status: u16) -> &'static str {
    match (code, status) {
        (ROUTE_NOT_FOUND, _) => "no_route_for_host",
        (PATH_NOT_FOUND, _) => NO_ROUTE_FOR_PATH,
        (_, 502) => "upstream_connection_failed",
        (_, 503) => "upstream_not_ready",
        (_, 504) => "upstream_timeout",
        _ => "edge_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::access_failure::UPSTREAM_UNAVAILABLE;
    use berth_crds::resource::{ResourceSpec, ResourceStatus, RuntimeObservation};
    use berth_crds::server::ServerSpec;
    use serde_json::json;

    fn server() -> Server {
        let spec: ServerSpec = serde_json::from_value(json!({
            "host": "127.0.0.1", "username": "root", "credentialId": "key",
            "proxy": { "kind": "caddy", "httpPort": 8080, "httpsPort": 8443 },
        }))
        .unwrap();
        Server::new("edge", spec)
    }

    fn id() -> ServerId {
        ServerId {
            namespace: "org-acme".into(),
            name: "edge".into(),
        }
    }

    fn failure(code: &str, resource: Option<&str>, status: u16) -> EdgeFailure {
        EdgeFailure {
            request_id: "req-1".into(),
            code: code.into(),
            resource: resource.map(str::to_string),
            status,
            method: "GET".into(),
            hostname: "shop.localhost".into(),
            path: "/app/x".into(),
            at_ms: 1_900_000_000_123,
        }
    }

    fn resource() -> Resource {
        let spec: ResourceSpec = serde_json::from_value(json!({
            "projectId": "prj-1", "environmentId": "env-1", "serverId": "edge",
            "name": "Shop", "slug": "shop", "kind": "application",
            "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
            "networkProfile": { "internalPort": 8080 },
            "accessProfile": { "pathPrefix": "/app" },
        }))
        .unwrap();
        let mut resource = Resource::new("shop", spec);
        resource.metadata.namespace = Some("org-acme".into());
        let runtime: RuntimeObservation = serde_json::from_value(json!({
            "lifecycle": "exited", "health": "unknown",
            "observedAt": "2030-01-01T00:00:00Z", "deploymentId": "dep-shop-2", "message": "",
        }))
        .unwrap();
        resource.status = Some(ResourceStatus {
            runtime: Some(runtime),
            ..ResourceStatus::default()
        });
        resource
    }

    #[test]
    fn an_unknown_host_has_no_route_and_the_spec_reason() {
        let evidence = evidence(&failure(ROUTE_NOT_FOUND, None, 404), &id(), &server(), None);
        assert_eq!(evidence.schema_version, SCHEMA_VERSION);
        assert_eq!(evidence.request_id, "req-1");
        assert_eq!(evidence.generated_at, "2030-03-17T17:46:40.123Z");
        assert_eq!(
            (evidence.category.as_str(), evidence.http_status),
            ("infra", 404)
        );
        assert_eq!(evidence.affected.url, "http://shop.localhost:8080/app/x");
        assert_eq!(evidence.route, None);
        assert_eq!(evidence.cause_code.as_deref(), Some("no_route_for_host"));
        assert_eq!(evidence.correlation_id.as_deref(), Some("req-1"));
    }

    #[test]
    fn an_unavailable_upstream_names_its_resource_route_and_serving_attempt() {
        let resource = resource();
        let failure = failure(UPSTREAM_UNAVAILABLE, Some("shop"), 502);
        let evidence = evidence(&failure, &id(), &server(), Some(&resource));
        let route = evidence.route.unwrap();
        assert_eq!(route.resource_id.as_deref(), Some("shop"));
        assert_eq!(route.deployment_id.as_deref(), Some("dep-shop-2"));
        assert_eq!(route.server_id.as_deref(), Some("edge"));
        assert_eq!(route.path_prefix.as_deref(), Some("/app"));
        assert_eq!(route.route_id.as_deref(), Some("berth-route.org-acme.shop"));
        assert!(evidence.retriable);
        assert_eq!(
            evidence.cause_code.as_deref(),
            Some("upstream_connection_failed")
        );
        // A resource gone from the cache still names itself.
        let gone = super::evidence(&failure, &id(), &server(), None);
        assert_eq!(gone.route.unwrap().resource_id.as_deref(), Some("shop"));
    }
}
