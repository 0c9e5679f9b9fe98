//! Deployment: one attempt, run as phases detect → plan → package → deploy → verify (→ rollback)
//! with a timeout each; progress and the last error are persisted in the status after every step.
//! One active attempt per resource: a newer one supersedes (the older ends `canceled`).

pub mod attempt;
pub mod config;
pub mod package;
pub mod plan;
pub mod progress;
pub mod runtime;

use std::sync::Arc;

use berth_crds::deployment::Deployment;
use berth_crds::server::Server;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use self::runtime::Target;
use super::server::observe::{credential_key, endpoint, pinned_host_key, server_id};
use super::{drain, error_policy};
use crate::context::Context;
use crate::error::{Error, Result};

const KIND: &str = "Deployment";

pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let deployments = Api::<Deployment>::all(context.client.clone());
    let stream = Controller::new(deployments, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(deployment: Arc<Deployment>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    // The cache may still hold a status from before the attempt's own last write; acting on it
    // would run a finished attempt again (and restart its serving container).
    let namespace = deployment
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Deployment>::namespaced(context.client.clone(), &namespace);
    let Some(deployment) = api.get_opt(&deployment.name_any()).await? else {
        return Ok(Action::await_change());
    };
    let ended = deployment
        .status
        .as_ref()
        .and_then(|s| s.status)
        .is_some_and(|s| s.is_terminal());
    if ended || deployment.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    attempt::run(&context, &deployment).await?;
    Ok(Action::await_change())
}

/// Connects to a server by name (through the shared pool) and returns its Docker and proxy.
pub async fn connect(
    context: &Context,
    namespace: &str,
    server_name: &str,
) -> Result<(Server, Target)> {
    let server = Api::<Server>::namespaced(context.client.clone(), namespace)
        .get_opt(server_name)
        .await?
        .ok_or_else(|| Error::InvalidSpec(format!("Server {server_name} does not exist")))?;
    let id = server_id(&server);
    let key = match credential_key(context, &server).await? {
        Ok(key) => key,
        // The credential may go first when a whole namespace is deleted; a live connection
        // still serves cleanup.
        Err(failure) => match context.servers.current(&id).await {
            Some(connection) => {
                let target = Target::new(connection, &server.spec.docker_socket_path, &id);
                return Ok((server, target));
            }
            None => return Err(Error::InvalidSpec(failure.message.clone())),
        },
    };
    let connection = context
        .servers
        .connect(
            &id,
            &endpoint(&server),
            &key,
            pinned_host_key(&server).as_deref(),
        )
        .await?;
    let target = Target::new(connection, &server.spec.docker_socket_path, &id);
    Ok((server, target))
}
