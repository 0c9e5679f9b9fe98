//! Observing a server over SSH: connect through the pool, gather facts (also the liveness
//! probe), ask Docker its version, make sure the edge proxy runs.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::server::{ProxyKind, Server, reason};

use super::status::{Contact, Failure, Observation, ProxyObservation};
use crate::context::Context;
use crate::error::Result;
use crate::server_connections::{credential_key, endpoint, pinned_host_key, server_id};
use berth_remote::docker::{docker_call, docker_over_ssh};
use berth_remote::{
    EdgeProxy, EdgeProxySettings, ProxyChange, RemoteError, ServerConnection, ServerId, facts,
};

/// How long a freshly started proxy gets to open its admin socket.
const PROXY_START_WAIT: Duration = Duration::from_secs(10);

fn failure(error: &RemoteError) -> Failure {
    Failure::new(error.reason(), error.condition_message())
}

/// Everything this reconcile can observe, plus what the proxy step changed.
pub async fn observe(
    context: &Context,
    server: &Server,
) -> Result<(Observation, Option<ProxyChange>)> {
    let nothing = |contact| Observation {
        contact,
        docker: None,
        proxy: None,
    };
    let key = match credential_key(context, server) {
        Ok(key) => key,
        Err(message) => {
            let failure = Failure::new(reason::CREDENTIAL_NOT_READY, message);
            return Ok((nothing(Err(failure)), None));
        }
    };
    let id = server_id(server);
    let endpoint = endpoint(server);
    let pinned = pinned_host_key(server);
    let pool = &context.servers;
    let connection = match pool.connect(&id, &endpoint, &key, pinned.as_deref()).await {
        Ok(connection) => connection,
        Err(error) => return Ok((nothing(Err(failure(&error))), None)),
    };
    let facts = match facts::gather(&connection).await {
        Ok(facts) => facts,
        Err(error) => {
            if error.breaks_connection() {
                pool.discard(&id, &connection).await;
            }
            return Ok((nothing(Err(failure(&error))), None));
        }
    };
    let contact = Contact {
        address: endpoint.address(),
        host_key_fingerprint: connection.host_key_fingerprint().to_string(),
        facts,
    };
    let socket = &server.spec.docker_socket_path;
    let docker = docker_over_ssh(connection.clone(), socket);
    let version = docker_call(&connection, "version", docker.version())
        .await
        .map(|v| v.version.unwrap_or_else(|| "unknown".into()));
    let version = match version {
        Ok(version) => version,
        Err(error) => {
            let observation = Observation {
                contact: Ok(contact),
                docker: Some(Err(Failure::new(
                    reason::DOCKER_NOT_READY,
                    format!("Docker on {socket}: {}", error.condition_message()),
                ))),
                proxy: None,
            };
            return Ok((observation, None));
        }
    };
    let (proxy, change) = match observe_proxy(connection, server, &id).await {
        Ok((proxy, change)) => (Ok(proxy), change),
        Err(error) => (Err(failure(&error)), None),
    };
    let observation = Observation {
        contact: Ok(contact),
        docker: Some(Ok(version)),
        proxy: Some(proxy),
    };
    Ok((observation, change))
}

/// Makes the proxy match the spec and checks that its admin API answers.
async fn observe_proxy(
    connection: Arc<ServerConnection>,
    server: &Server,
    id: &ServerId,
) -> Result<(ProxyObservation, Option<ProxyChange>), RemoteError> {
    let spec = &server.spec.proxy;
    let proxy = EdgeProxy::new(connection, &server.spec.docker_socket_path, id);
    match spec.kind {
        ProxyKind::None => {
            // A proxy Berth started earlier for this server is no longer wanted.
            proxy.remove().await?;
            return Ok((ProxyObservation::Disabled, None));
        }
        ProxyKind::Traefik => {
            return Ok((ProxyObservation::Unsupported("traefik".into()), None));
        }
        ProxyKind::Caddy => {}
    }
    let settings = EdgeProxySettings {
        image: spec.image.clone(),
        http_port: u16::try_from(spec.http_port).unwrap_or(80),
        https_port: u16::try_from(spec.https_port).unwrap_or(443),
    };
    let change = proxy.ensure(&settings).await?;
    if change == ProxyChange::Unchanged {
        proxy.ensure_base_config().await?;
    } else {
        wait_for_admin(&proxy).await?;
    }
    let observation = ProxyObservation::Running {
        container: proxy.names().container.clone(),
    };
    Ok((
        observation,
        Some(change).filter(|c| *c != ProxyChange::Unchanged),
    ))
}

/// A started container needs a moment before Caddy listens on its admin socket.
async fn wait_for_admin(proxy: &EdgeProxy) -> Result<(), RemoteError> {
    let deadline = tokio::time::Instant::now() + PROXY_START_WAIT;
    loop {
        match proxy.ensure_base_config().await {
            Ok(_) => return Ok(()),
            Err(error) if tokio::time::Instant::now() >= deadline => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}
