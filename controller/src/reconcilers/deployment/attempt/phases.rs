//! The attempt's phases, one function each: detect → plan → package → deploy → verify (and
//! the rollback of a failed deploy or verify). Each runs under its deadline, records its step,
//! and stops the attempt with a [`Halt`] saying why.

use std::future::Future;
use std::time::Duration;

use berth_crds::deployment::{DeploymentErrorCode as Code, DeploymentPhase, DeploymentState};
use berth_crds::resource::Resource;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};

use super::super::compose::stack::Stack;
use super::super::config;
use super::super::connect;
use super::super::package;
use super::super::package::source::SourceAccess;
use super::super::package_failure::PackageFailure;
use super::super::plan::{self, Plan};
use super::super::progress::Progress;
use super::server::{AttemptServer, LiveServer};
use crate::attempt_supervisor::{Interrupt, Signal};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::Error;
use crate::server_connections::credential_key_named;
use berth_crds::GENERATION_ANNOTATION;
use berth_crds::deployment::Deployment;
use berth_remote::RemoteError;

use DeploymentPhase::{Detect, Package};

/// Deadline of the detect, plan and deploy phases (package has its own, see `package`).
pub const PHASE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a long phase looks in the cache for its Deployment's deletion.
const DELETION_POLL: Duration = Duration::from_millis(250);

/// Why an attempt ended early.
#[derive(Debug)]
pub struct Stop {
    pub state: DeploymentState,
    pub phase: DeploymentPhase,
    pub code: Code,
    pub message: String,
    /// The way to the server failed, not the attempt itself: a retry may succeed.
    pub transient: bool,
}

pub fn stop(phase: DeploymentPhase, code: Code, message: impl Into<String>) -> Stop {
    Stop {
        state: DeploymentState::Failed,
        phase,
        code,
        message: message.into(),
        transient: false,
    }
}

/// A stop caused by `error` on the way to the server; transient when the transport failed.
pub(super) fn stop_remote(phase: DeploymentPhase, code: Code, error: &RemoteError) -> Stop {
    Stop {
        transient: error.is_transient(),
        ..stop(phase, code, error.to_string())
    }
}

/// Why the phases did not run to the end.
#[derive(Debug)]
pub enum Halt {
    /// The attempt ends (or is retried) as the stop says.
    Stop(Stop),
    /// The controller stops: the attempt stays unfinished, for the next leader to run again.
    Shutdown,
    /// One of the controller's own API calls failed: the attempt runs again shortly.
    Fault(Error),
}

impl From<Stop> for Halt {
    fn from(stop: Stop) -> Self {
        Self::Stop(stop)
    }
}

impl From<Error> for Halt {
    fn from(error: Error) -> Self {
        Self::Fault(error)
    }
}

impl Halt {
    /// What `interrupt` means for an attempt in `phase`.
    pub fn from_interrupt(interrupt: Interrupt, phase: DeploymentPhase) -> Self {
        let canceled = |code, message: String| Stop {
            state: DeploymentState::Canceled,
            ..stop(phase, code, message)
        };
        match interrupt {
            Interrupt::Canceled => canceled(Code::Canceled, "canceled on request".into()).into(),
            Interrupt::Superseded(newer) => canceled(
                Code::Superseded,
                format!("superseded by the newer attempt {newer}"),
            )
            .into(),
            Interrupt::Deleted => stop(phase, Code::Deleted, "the Deployment was deleted").into(),
            Interrupt::Shutdown => Self::Shutdown,
        }
    }
}

/// What an attempt reads of its own Deployment and of the other attempts for its resource.
pub trait Siblings: Send + Sync {
    /// Whether the attempt must stop: deleted, cancel requested, or a newer attempt exists.
    fn interruption(&self) -> Option<Interrupt>;
    /// Whether an attempt for the resource succeeded before: a route reaches its upstream name.
    fn any_succeeded(&self) -> bool;
    /// Whether the attempt `name` (of the same resource) is newer than this one.
    fn is_newer(&self, name: &str) -> bool;
}

/// Where a running attempt learns that it must stop: its signal at once, and between phases
/// also what the cache says.
pub struct Guard<'a> {
    pub signal: Signal,
    pub siblings: &'a dyn Siblings,
}

impl Guard<'_> {
    /// Stops the attempt before `phase` if it must stop.
    pub fn check(&self, phase: DeploymentPhase) -> Result<(), Halt> {
        let signalled = self.signal.borrow().clone();
        match signalled.or_else(|| self.siblings.interruption()) {
            Some(interrupt) => Err(Halt::from_interrupt(interrupt, phase)),
            None => Ok(()),
        }
    }

    /// Resolves once the attempt must stop during `phase`: at once when it is told to, and
    /// within [`DELETION_POLL`] when its Deployment is deleted.
    async fn interrupted(&self, phase: DeploymentPhase) -> Halt {
        let mut signal = self.signal.clone();
        let told = async {
            let interrupt = signal.wait_for(Option::is_some).await.ok();
            match interrupt.and_then(|interrupt| interrupt.clone()) {
                Some(interrupt) => interrupt,
                // The supervisor is gone: only the deadline or a deletion ends the phase.
                None => std::future::pending().await,
            }
        };
        // The shared watch passes no deletions on, so only the cache can tell; looking there
        // costs no request.
        let deleted = async {
            loop {
                tokio::time::sleep(DELETION_POLL).await;
                if let Some(interrupt) = self.siblings.interruption() {
                    return interrupt;
                }
            }
        };
        let interrupt = tokio::select! {
            interrupt = told => interrupt,
            interrupt = deleted => interrupt,
        };
        Halt::from_interrupt(interrupt, phase)
    }

    /// `work` under its deadline, ended early when the attempt is told to stop.
    pub(super) async fn within<T>(
        &self,
        phase: DeploymentPhase,
        limit: Duration,
        work: impl Future<Output = Result<T, Stop>>,
    ) -> Result<T, Halt> {
        tokio::select! {
            done = timed(phase, limit, work) => done.map_err(Halt::from),
            halt = self.interrupted(phase) => Err(halt),
        }
    }
}

/// A phase under its deadline; running out of time stops the attempt.
pub(super) async fn timed<T>(
    phase: DeploymentPhase,
    limit: Duration,
    work: impl Future<Output = Result<T, Stop>>,
) -> Result<T, Stop> {
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
        Err(stop(
            phase,
            Code::PhaseTimeout,
            format!("phase did not finish within {}s", limit.as_secs()),
        ))
    })
}

/// Detect: the Resource the attempt deploys.
pub async fn detect(
    context: &Context,
    progress: &mut Progress<'_>,
    guard: &Guard<'_>,
) -> Result<Resource, Halt> {
    let deployment = progress.deployment;
    progress.step(Detect, 1, "Detecting the source");
    guard.check(Detect)?;
    let namespace = deployment.namespace().unwrap_or_default();
    let name = &deployment.spec.resource_id;
    let resource = match cached_resource(context, deployment, &namespace) {
        Some(cached) => Some(cached),
        None => {
            let resources = Api::<Resource>::namespaced(context.client.clone(), &namespace);
            resources.get_opt(name).await.map_err(Error::from)?
        }
    };
    let resource = resource.ok_or_else(|| {
        let message = format!("Resource {} does not exist", deployment.spec.resource_id);
        stop(Detect, Code::ResourceNotFound, message)
    })?;
    // Its cleanup may already have cleared the server: a container started now would outlive
    // the Resource.
    if resource.metadata.deletion_timestamp.is_some() {
        let message = format!("Resource {name} is being deleted");
        return Err(stop(Detect, Code::ResourceNotFound, message).into());
    }
    Ok(resource)
}

/// The attempt's Resource from the cache, when the cache has seen at least the generation the
/// attempt was made for (the API server would answer the same or newer); otherwise `None`, and
/// the API server is asked.
fn cached_resource(
    context: &Context,
    deployment: &Deployment,
    namespace: &str,
) -> Option<Resource> {
    let cached = Caches::get(
        &context.caches.resources,
        namespace,
        &deployment.spec.resource_id,
    )?;
    let wanted: i64 = deployment
        .annotations()
        .get(GENERATION_ANNOTATION)?
        .parse()
        .ok()?;
    let current = cached.metadata.generation?;
    (current >= wanted && cached.metadata.deletion_timestamp.is_none())
        .then(|| cached.as_ref().clone())
}

/// Plan: the container and route to set up, from the resource, its server and its effective
/// configuration; and the way to that server. Only reads: a cancel still stops the attempt
/// before anything on the server changes.
pub async fn plan(
    context: &Context,
    progress: &mut Progress<'_>,
    guard: &Guard<'_>,
    resource: &Resource,
) -> Result<(Plan, LiveServer), Halt> {
    use DeploymentPhase::Plan;
    let deployment = progress.deployment;
    let namespace = deployment.namespace().unwrap_or_default();
    progress.status.status = Some(DeploymentState::Planning);
    progress.step(Plan, 2, "Planning the container and route");
    guard.check(Plan)?;
    // The connection and the configuration are looked up at once.
    let (connected, entries) = tokio::join!(
        tokio::time::timeout(
            PHASE_TIMEOUT,
            connect(context, &namespace, &deployment.spec.server_id),
        ),
        config::attempt_entries(context, &namespace, resource, deployment),
    );
    let (server, target) = match connected {
        Err(_) => {
            return Err(stop(Plan, Code::PhaseTimeout, "server not reachable in time").into());
        }
        Ok(Err(Error::InvalidSpec(message))) => {
            return Err(stop(Plan, Code::ServerNotReady, message).into());
        }
        Ok(Err(Error::Remote(error))) => {
            return Err(stop(Plan, Code::ServerUnreachable, error.to_string()).into());
        }
        Ok(other) => other?,
    };
    let mut plan = plan::plan(
        resource,
        &server,
        &deployment.name_any(),
        deployment.spec.source_snapshot.as_ref(),
        &context.caches.storage_volumes_of(resource),
    )
    .map_err(|e| stop(Plan, e.code, e.message))?;
    plan.restart_held = true;
    // A rollback runs the earlier attempt's image instead of fetching and building the source.
    if let Some(rollback) = &deployment.spec.rollback_of {
        let secret = resource.spec.image_pull_secret_ref.as_ref();
        plan::serve_image(
            &mut plan,
            &rollback.image_ref,
            secret.map(|r| r.name.clone()),
        );
    }
    let (entries, attachments) = entries?.map_err(|(problem, fingerprint)| {
        progress.status.config_fingerprint = Some(fingerprint);
        stop(Plan, problem.code, problem.message)
    })?;
    attachments.apply_to(&mut plan);
    progress.status.config_fingerprint = Some(berth_crds::config::fingerprint(&entries));
    config::apply_to(&mut plan, entries);
    progress.status.image_ref = Some(plan.image.clone());
    progress.status.status = Some(DeploymentState::Planned);
    progress.write();
    let sources = source_access(context, deployment, &mut plan)?;
    let live = LiveServer {
        target,
        docker_socket: server.spec.docker_socket_path.clone(),
        secrets: Api::<Secret>::namespaced(context.client.clone(), &namespace),
        sources,
    };
    Ok((plan, live))
}

/// What fetching the plan's git source needs: its deploy key, read from the SshCredential the
/// source names, and the git host's key the fetch must find (the source's pin, else the one
/// the resource's latest fetch recorded).
fn source_access(
    context: &Context,
    deployment: &Deployment,
    plan: &mut Plan,
) -> Result<SourceAccess, Stop> {
    use DeploymentPhase::Plan;
    let mut access = SourceAccess {
        cache: context.sources.clone(),
        deploy_key: None,
    };
    let Some(git) = package::source::git_origin_mut(plan) else {
        return Ok(access);
    };
    let namespace = deployment.namespace().unwrap_or_default();
    if git.pinned_host_key.is_none() {
        let attempts = context
            .caches
            .deployments_of(&namespace, &deployment.spec.resource_id);
        git.pinned_host_key = package::source::recorded_host_key(&attempts, &git.repository);
    }
    if let Some(id) = &git.credential_id {
        let key = credential_key_named(context, &namespace, id)
            .map_err(|message| stop(Plan, Code::DeployKeyInvalid, message))?;
        access.deploy_key = Some(key);
    }
    Ok(access)
}

/// Package: the image onto the server. A build or a pull may take minutes; a cancel or a
/// newer attempt ends it at once.
pub async fn package(
    server: &impl AttemptServer,
    progress: &mut Progress<'_>,
    guard: &Guard<'_>,
    plan: &Plan,
) -> Result<Option<Stack>, Halt> {
    guard.check(Package)?;
    progress.status.status = Some(DeploymentState::Running);
    progress.step(Package, 3, &package::step_label(plan));
    let output = progress.output();
    let failed = |f: PackageFailure| stop(Package, f.code, f.message);
    let fetching = async { server.fetch_source(plan, &output).await.map_err(failed) };
    let fetched = guard
        .within(Package, package::phase_timeout(), fetching)
        .await?;
    // The commit is on the attempt before it is built: a failed build names what failed.
    if let Some(fetched) = &fetched {
        progress.status.source_commit = Some(fetched.record());
        progress.write();
    }
    let packaged = async {
        let packaged = server.package(plan, fetched.as_ref(), &output).await;
        packaged.map_err(failed)
    };
    let stack = guard
        .within(Package, package::phase_timeout(), packaged)
        .await?;
    // The build's output is in the timeline before the status moves on: readers that follow
    // the status (the progress stream) then show every line before the next step.
    progress.flush_output().await;
    Ok(stack)
}

/// After verify, before the success is written: the containers of older attempts stop taking
/// connections on SIGTERM and finish what they accepted before they exit, and a stack's dropped
/// services go. A newer attempt's container, started meanwhile, stays.
pub async fn retire_older(
    server: &impl AttemptServer,
    siblings: &dyn Siblings,
    deployment: &Deployment,
    plan: &Plan,
    stack: Option<&Stack>,
) {
    let namespace = deployment.namespace().unwrap_or_default();
    let resource = &deployment.spec.resource_id;
    if let Some(stack) = stack {
        server
            .remove_dropped_services(&namespace, resource, stack)
            .await;
    }
    let containers = server
        .resource_containers(&namespace, resource)
        .await
        .unwrap_or_default();
    let older = containers.into_iter().filter(|(name, started_by)| {
        *name != plan.container_name && !siblings.is_newer(started_by)
    });
    for (name, _) in older {
        if let Err(error) = server.retire(&name).await {
            tracing::warn!(%error, container = %name, "could not retire an old container");
        }
    }
    server
        .prune_built_images(&namespace, resource, &plan.image)
        .await;
}
