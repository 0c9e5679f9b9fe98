//! Observing a server over SSH: connect through the pool, gather facts (also the liveness
//! probe), ask Docker its version, make sure the edge proxy runs.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::server::{ProxyKind, Server};
use kube::ResourceExt;

use berth_crds::server::reason;

use super::status::{Contact, Failure, Observation, ProxyObservation};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};
use berth_remote::docker::{docker_call, docker_over_ssh};
use berth_remote::key_from_secret;
use berth_remote::{
    ClientKey, CommandOutput, EdgeProxy, EdgeProxySettings, Endpoint, ProxyChange, RemoteError,
    ServerConnection, ServerId, facts,
};

/// How long a freshly started proxy gets to open its admin socket.
const PROXY_START_WAIT: Duration = Duration::from_secs(10);

/// The server's identity in the connection pool.
pub fn server_id(server: &Server) -> ServerId {
    ServerId {
        namespace: server.namespace().unwrap_or_default(),
        name: server.name_any(),
    }
}

pub fn endpoint(server: &Server) -> Endpoint {
    Endpoint {
        host: server.spec.host.clone(),
        port: u16::try_from(server.spec.port).unwrap_or(22),
        username: server.spec.username.clone(),
    }
}

/// The host key fingerprint a connection must present: the spec's pin, else the one recorded on
/// first contact.
pub fn pinned_host_key(server: &Server) -> Option<String> {
    server
        .spec
        .expected_host_key_fingerprint
        .clone()
        .or_else(|| {
            server
                .status
                .as_ref()
                .and_then(|s| s.host_key_fingerprint.clone())
        })
}

/// The private key of the server's credential, or why there is none, from the caches.
pub fn credential_key(context: &Context, server: &Server) -> Result<ClientKey, Failure> {
    let namespace = server.namespace().unwrap_or_default();
    credential_key_named(context, &namespace, &server.spec.credential_id)
}

/// The private key of the SshCredential `name` in `namespace`, from the caches.
pub fn credential_key_named(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<ClientKey, Failure> {
    let caches = &context.caches;
    let Some(credential) = Caches::get(&caches.credentials, namespace, name) else {
        return Err(Failure::new(
            reason::CREDENTIAL_NOT_READY,
            format!("SshCredential {name} does not exist"),
        ));
    };
    let reference = &credential.spec.private_key_secret_ref;
    let secret = Caches::get(&caches.secrets, namespace, &reference.name);
    key_from_secret(secret.as_deref(), &reference.name, &reference.key).map_err(|problem| {
        Failure::new(
            reason::CREDENTIAL_NOT_READY,
            format!("SshCredential {name}: {}", problem.message()),
        )
    })
}

/// The cached Server `name` and a connection to it through the shared pool.
pub async fn server_connection(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<(Arc<Server>, Arc<ServerConnection>)> {
    let server = Caches::get(&context.caches.servers, namespace, name)
        .ok_or_else(|| Error::InvalidSpec(format!("Server {name} does not exist")))?;
    let id = server_id(&server);
    let key = match credential_key(context, &server) {
        Ok(key) => key,
        // The credential may go first when a whole namespace is deleted; a live connection
        // still serves cleanup.
        Err(failure) => match context.servers.current(&id).await {
            Some(connection) => return Ok((server, connection)),
            None => return Err(Error::InvalidSpec(failure.message)),
        },
    };
    let pinned = pinned_host_key(&server);
    let connection = context
        .servers
        .connect(&id, &endpoint(&server), &key, pinned.as_deref())
        .await?;
    Ok((server, connection))
}

/// Runs `command` on one of server `name`'s exec channels (the pool counts them against
/// sshd's session limit).
pub async fn server_exec(
    context: &Context,
    namespace: &str,
    name: &str,
    command: &str,
) -> Result<CommandOutput> {
    let server = Caches::get(&context.caches.servers, namespace, name)
        .ok_or_else(|| Error::InvalidSpec(format!("Server {name} does not exist")))?;
    let key = credential_key(context, &server).map_err(|f| Error::InvalidSpec(f.message))?;
    let pinned = pinned_host_key(&server);
    let output = context
        .servers
        .exec(
            &server_id(&server),
            &endpoint(&server),
            &key,
            pinned.as_deref(),
            command,
        )
        .await?;
    Ok(output)
}

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
        Err(failure) => return Ok((nothing(Err(failure)), None)),
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
