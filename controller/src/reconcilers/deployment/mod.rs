//! Deployment: one attempt, run as phases detect → plan → package → deploy → verify (→ rollback)
//! with a timeout each; progress and the last error are persisted in the status after every step.
//! One active attempt per resource: a newer one supersedes (the older ends `canceled`). Each
//! run is a task of the context's attempt supervisor ([`crate::attempt_supervisor`]), so
//! `reconcile` stays short.

pub mod attempt;
pub mod bindings;
pub mod compose;
pub mod config;
pub mod container_settings;
pub mod diagnosis;
pub mod package;
pub mod package_failure;
pub mod plan;
pub mod probe;
pub mod progress;
pub mod server_target;
pub mod waiting;

use std::sync::Arc;

use berth_crds::deployment::Deployment;
use berth_crds::server::Server;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};

use self::server_target::Target;
use crate::attempt_supervisor;
use crate::cache::Subscription;
use crate::cache::{changed_by, digest};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::policy::{drain, error_policy};
use crate::server_connections::{server_connection, server_id};

const KIND: &str = "Deployment";

/// What the Deployment controller reacts to.
pub struct Inputs {
    pub deployments: Subscription<Deployment>,
    pub servers: Subscription<Server>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let deployments = context.caches.deployments.clone();
    let waiting = deployments.clone();
    // A server becoming ready (or not) releases the attempts waiting for it.
    let readiness = changed_by(inputs.servers, |server: &Server| {
        digest(waiting::server_ready(server).is_ok())
    });
    let stream = Controller::for_shared_stream(inputs.deployments, deployments)
        .watches_shared_stream(readiness, move |server| {
            waiting::attempts_on(&waiting, &server)
        })
        .reconcile_on(context.attempts.ended())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context.clone());
    drain(KIND, stream).await;
    // Reconciles are short; the attempts they started stop now, not after a build.
    context
        .attempts
        .shut_down(attempt_supervisor::SETTLE_ON_SHUTDOWN)
        .await;
}

async fn reconcile(cached: Arc<Deployment>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    if has_ended(&cached) {
        return Ok(Action::await_change());
    }
    // A running attempt writes its status as it goes: each write lands here, and only a
    // cancel or a deletion is news to it.
    if attempt::follow(&context, &cached) {
        return Ok(Action::await_change());
    }
    let Some(deployment) = current(&context, &cached).await? else {
        return Ok(Action::await_change());
    };
    if has_ended(&deployment) || deployment.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    attempt::reconcile(&context, deployment).await
}

/// The attempt as it is now. The cache may still hold a status from before the attempt's own
/// last write; acting on it would run a finished attempt again (and restart its serving
/// container), so it is read again, unless this process created it and never reconciled it.
async fn current(context: &Context, cached: &Deployment) -> Result<Option<Deployment>> {
    let own = cached
        .uid()
        .is_some_and(|uid| context.attempts.first_reconcile_of_own(&uid));
    if own && cached.status.is_none() {
        return Ok(Some(cached.clone()));
    }
    let namespace = cached
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Deployment>::namespaced(context.client.clone(), &namespace);
    Ok(api.get_opt(&cached.name_any()).await?)
}

/// Whether the attempt reached a final state (which it never leaves).
fn has_ended(deployment: &Deployment) -> bool {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.status)
        .is_some_and(|s| s.is_terminal())
}

/// Connects to a server by name (through the shared pool) and returns its Docker and proxy.
pub async fn connect(
    context: &Context,
    namespace: &str,
    server_name: &str,
) -> Result<(Arc<Server>, Target)> {
    let (server, connection) = server_connection(context, namespace, server_name).await?;
    let target = Target::new(
        connection,
        &server.spec.docker_socket_path,
        &server_id(&server),
    );
    Ok((server, target))
}
