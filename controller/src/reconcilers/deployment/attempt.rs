//! Running one attempt: every phase under its own deadline, the status written as it goes, a
//! cancel or a newer attempt honoured between phases, and a failed verify rolled back.

use std::future::Future;
use std::time::Duration;

use berth_crds::deployment::{
    Deployment, DeploymentError, DeploymentPhase, DeploymentRetry, DeploymentState,
    DeploymentStatus,
};
use berth_crds::masking::Masker;
use berth_crds::progress::Level;
use berth_crds::resource::Resource;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource as _, ResourceExt};

use super::connect;
use super::package;
use super::plan::plan;
use super::progress::{OutputSink, Progress};
use super::runtime::{ProbeError, Target};
use super::waiting;
use crate::cache::Caches;
use crate::context::Context;
use crate::error::{Error, Result};
use berth_remote::RemoteError;

/// How often a long phase looks (in the cache) for a cancel request or a newer attempt.
const INTERRUPTION_POLL: Duration = Duration::from_millis(250);
/// Deadline of the detect, plan and deploy phases (package has its own, see `package`).
const PHASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Why an attempt stopped early.
struct Stop {
    state: DeploymentState,
    phase: DeploymentPhase,
    code: &'static str,
    message: String,
    /// The way to the server failed, not the attempt itself: a retry may succeed.
    transient: bool,
}

fn stop(phase: DeploymentPhase, code: &'static str, message: impl Into<String>) -> Stop {
    Stop {
        state: DeploymentState::Failed,
        phase,
        code,
        message: message.into(),
        transient: false,
    }
}

/// A stop caused by `error` on the way to the server; transient when the transport failed.
fn stop_remote(phase: DeploymentPhase, code: &'static str, error: &RemoteError) -> Stop {
    Stop {
        transient: error.is_transient(),
        ..stop(phase, code, error.to_string())
    }
}

/// Runs (or re-runs, after a restart or a passing fault) the attempt to its end, unless it
/// has to wait for its server or for a retry; the action says when to look again.
pub async fn run(context: &Context, deployment: &Deployment) -> Result<Action> {
    let namespace = deployment
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    seen_by_cache(context, deployment).await;
    let mut progress = Progress::start(
        Api::namespaced(context.client.clone(), &namespace),
        deployment,
        context.timeline.clone(),
    );
    if let Some(wait) = retry_not_due(&progress.status) {
        return Ok(Action::requeue(wait));
    }
    if let Err(stopped) = interruption(context, &namespace, deployment, DeploymentPhase::Detect)? {
        end_early(context, deployment, &mut progress, stopped).await?;
        return Ok(Action::await_change());
    }
    if let Some(blocker) = waiting::server_blocker(&context.caches, deployment) {
        wait_for_server(context, deployment, progress, &blocker).await?;
        // The server's readiness change wakes the attempt; this is only the safety net.
        return Ok(Action::requeue(super::super::RESYNC_AFTER));
    }
    match &progress.status.retry {
        Some(retry) => progress.note(
            Level::Info,
            format!("retry {}: running the attempt again", retry.count),
        ),
        // Started before and never ended: the controller stopped (or lost a write) midway.
        None if progress.status.started_at.is_some() => progress.note(
            Level::Warn,
            "the attempt was interrupted (controller restart or a lost status write); it runs \
             again from the start",
        ),
        None => {}
    }
    progress.status.status = Some(DeploymentState::Running);
    progress.status.started_at = Some(Time(Timestamp::now()));
    progress.status.finished_at = None;
    progress.status.last_error = None;
    let mut new_container = None;
    let outcome = phases(context, &namespace, &mut progress, &mut new_container).await?;
    let Err(stopped) = outcome else {
        progress.status.retry = None;
        progress.end(DeploymentState::Succeeded, None).await?;
        return Ok(Action::await_change());
    };
    // Whatever stopped the attempt, the old container keeps serving: remove only the new one.
    if let Some((target, name)) = new_container {
        progress.status.phase = Some(DeploymentPhase::Rollback);
        if let Err(error) = Target::remove_container(&target, &name).await {
            tracing::warn!(%error, container = %name, "could not remove the failed container");
        }
    }
    let transient = stopped.transient || waiting::is_transient(stopped.phase, stopped.code);
    if stopped.state == DeploymentState::Failed && transient {
        let delay = schedule_retry(context, deployment, progress, stopped).await?;
        return Ok(Action::requeue(delay));
    }
    end_early(context, deployment, &mut progress, stopped).await?;
    Ok(Action::await_change())
}

/// Ends the attempt as `stopped` says, with an Event.
async fn end_early(
    context: &Context,
    deployment: &Deployment,
    progress: &mut Progress<'_>,
    stopped: Stop,
) -> Result<()> {
    let type_ = match stopped.state {
        DeploymentState::Canceled => EventType::Normal,
        _ => EventType::Warning,
    };
    context
        .publish_event(
            &deployment.object_ref(&()),
            type_,
            stopped.code,
            stopped.message.clone(),
        )
        .await;
    let error = DeploymentError {
        timestamp: Time(Timestamp::now()),
        phase: stopped.phase,
        code: stopped.code.into(),
        message: stopped.message,
    };
    progress.status.retry = None;
    if stopped.code == "canceled" {
        // Watchers see the request acknowledged before the attempt ends.
        progress.status.status = Some(DeploymentState::CancelRequested);
        progress.write();
    }
    progress.end(stopped.state, Some(error)).await
}

/// Records that the attempt waits for its server, once per wait (status, Event, timeline).
async fn wait_for_server(
    context: &Context,
    deployment: &Deployment,
    mut progress: Progress<'_>,
    blocker: &str,
) -> Result<()> {
    let server = &deployment.spec.server_id;
    let message = format!("waiting for server {server}: {blocker}");
    progress
        .status
        .status
        .get_or_insert(DeploymentState::Created);
    if !progress.waiting_for(waiting::WAITING_FOR_SERVER, &message) {
        return progress.settle().await;
    }
    context
        .publish_event(
            &deployment.object_ref(&()),
            EventType::Normal,
            waiting::WAITING_FOR_SERVER,
            message.clone(),
        )
        .await;
    progress.note(Level::Info, message);
    progress.settle().await
}

/// Keeps the attempt open after a passing fault and says when it runs again; returns the delay.
async fn schedule_retry(
    context: &Context,
    deployment: &Deployment,
    mut progress: Progress<'_>,
    stopped: Stop,
) -> Result<Duration> {
    let count = progress.status.retry.as_ref().map_or(0, |r| r.count) + 1;
    let delay = waiting::retry_delay(u32::try_from(count).unwrap_or(u32::MAX));
    let message = format!(
        "{} ({}); retry {count} in {}s",
        stopped.message,
        stopped.code,
        delay.as_secs()
    );
    let next = Timestamp::now() + delay;
    progress.status.retry = Some(DeploymentRetry {
        count,
        next_retry_at: Time(next),
        last_error: DeploymentError {
            timestamp: Time(Timestamp::now()),
            phase: stopped.phase,
            code: stopped.code.into(),
            message: stopped.message.clone(),
        },
    });
    progress.waiting_for(waiting::RETRY_SCHEDULED, &message);
    progress.note(Level::Warn, message.clone());
    context
        .publish_event(
            &deployment.object_ref(&()),
            EventType::Warning,
            waiting::RETRY_SCHEDULED,
            message,
        )
        .await;
    progress.settle().await?;
    Ok(delay)
}

/// How long until a scheduled retry is due; `None` when none is scheduled or it is due.
fn retry_not_due(status: &DeploymentStatus) -> Option<Duration> {
    let next = status.retry.as_ref()?.next_retry_at.0;
    let left = next.duration_since(Timestamp::now());
    Duration::try_from(left).ok().filter(|d| !d.is_zero())
}

/// Waits (briefly) until the cache holds the attempt: from then on, its absence there means
/// the Deployment was deleted.
async fn seen_by_cache(context: &Context, deployment: &Deployment) {
    let reference = ObjectRef::from_obj(deployment);
    for _ in 0..50 {
        if context.caches.deployments.get(&reference).is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Lines of a failed container's output kept in the timeline.
const LOG_TAIL_LINES: usize = 50;

/// Records the last lines of the new container's output, masked, in the attempt's timeline.
async fn record_log_tail(target: &Target, plan: &super::plan::Plan, output: &OutputSink) {
    let tail = tokio::time::timeout(
        PHASE_TIMEOUT,
        target.log_tail(&plan.container_name, LOG_TAIL_LINES),
    )
    .await
    .unwrap_or_else(|_| Err("no answer in time".into()));
    match tail {
        Ok(lines) => {
            let masker = Masker::new(plan.secret_values.iter().chain(plan.build_args.values()));
            for (stream, line) in lines {
                output.line(stream, &masker.mask(&line));
            }
        }
        Err(error) => {
            tracing::warn!(%error, container = %plan.container_name, "could not read the container's output");
        }
    }
}

/// A phase under its deadline; running out of time stops the attempt.
async fn timed<T>(
    phase: DeploymentPhase,
    limit: Duration,
    work: impl Future<Output = std::result::Result<T, Stop>>,
) -> std::result::Result<T, Stop> {
    tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
        Err(stop(
            phase,
            "phase_timeout",
            format!("phase did not finish within {}s", limit.as_secs()),
        ))
    })
}

/// The phases in order. `Ok(Err(stop))` is an attempt that ended early; `Err` is a fault of the
/// controller's own API calls, retried by the caller.
async fn phases(
    context: &Context,
    namespace: &str,
    progress: &mut Progress<'_>,
    new_container: &mut Option<(Target, String)>,
) -> Result<std::result::Result<(), Stop>> {
    use DeploymentPhase::*;
    let deployment = progress.deployment;
    macro_rules! check {
        ($e:expr) => {
            match $e {
                Ok(value) => value,
                Err(stop) => return Ok(Err(stop)),
            }
        };
    }
    progress.step(Detect, 1, "Detecting the source");
    let resources = Api::<Resource>::namespaced(context.client.clone(), namespace);
    let (checked, resource) = tokio::join!(
        async { interruption(context, namespace, deployment, Detect) },
        resources.get_opt(&deployment.spec.resource_id),
    );
    check!(checked?);
    let resource = check!(resource?.ok_or_else(|| stop(
        Detect,
        "resource_not_found",
        format!("Resource {} does not exist", deployment.spec.resource_id)
    )));

    progress.status.status = Some(DeploymentState::Planning);
    progress.step(Plan, 2, "Planning the container and route");
    // Only reads so far: the interruption check, the connection and the configuration go at
    // once, and a cancel still stops the attempt before anything on the server changes.
    let (checked, connected, entries) = tokio::join!(
        async { interruption(context, namespace, deployment, Plan) },
        tokio::time::timeout(
            PHASE_TIMEOUT,
            connect(context, namespace, &deployment.spec.server_id),
        ),
        super::config::entries(context, namespace, &resource, deployment),
    );
    check!(checked?);
    let (server, target) = match connected {
        Err(_) => {
            return Ok(Err(stop(
                Plan,
                "phase_timeout",
                "server not reachable in time",
            )));
        }
        Ok(Err(Error::InvalidSpec(message))) => {
            return Ok(Err(stop(Plan, "server_not_ready", message)));
        }
        Ok(Err(Error::Remote(error))) => {
            return Ok(Err(stop(Plan, "server_unreachable", error.to_string())));
        }
        Ok(other) => other?,
    };
    let mut plan = check!(
        plan(
            &resource,
            &server,
            &deployment.name_any(),
            deployment.spec.source_snapshot.as_ref(),
        )
        .map_err(|e| stop(Plan, e.code, e.message))
    );
    let entries = entries?;
    progress.status.config_fingerprint = Some(berth_crds::config::fingerprint(&entries));
    super::config::apply_to(&mut plan, entries);
    progress.status.image_ref = Some(plan.image.clone());
    progress.status.status = Some(DeploymentState::Planned);
    progress.write();

    check!(interruption(context, namespace, deployment, Package)?);
    progress.status.status = Some(DeploymentState::Running);
    progress.step(Package, 3, &package::step_label(&plan));
    let socket = &server.spec.docker_socket_path;
    let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
    let output = progress.output();
    check!(
        timed(Package, package::phase_timeout(), async {
            // A build or a pull may take minutes: a cancel or a newer attempt ends it early.
            tokio::select! {
                packaged = package::package(&target, socket, &plan, &secrets, &output) => {
                    packaged.map_err(|f| stop(Package, f.code, f.message))
                }
                stopped = watch_interruption(context, namespace, deployment, Package) => {
                    Err(stopped)
                }
            }
        })
        .await
    );

    // The build's output is in the timeline before the status moves on: readers that follow
    // the status (the progress stream) then show every line before the next step.
    context.timeline.flush().await;
    check!(interruption(context, namespace, deployment, Deploy)?);
    let label = format!("Starting container {}", plan.container_name);
    progress.step(Deploy, 4, &label);
    progress.status.container_id = Some(plan.container_name.clone());
    // Until an attempt succeeded, no route reaches the upstream name: the first container may
    // carry it from the start, which spares the rejoin below.
    let first = !context
        .caches
        .deployments_of(namespace, &deployment.spec.resource_id)
        .iter()
        .any(|d| d.status.as_ref().and_then(|s| s.status) == Some(DeploymentState::Succeeded));
    let started = timed(Deploy, PHASE_TIMEOUT, async {
        target
            .start_container(&plan, first)
            .await
            .map_err(|e| stop_remote(Deploy, "container_start_failed", &e))
    })
    .await;
    *new_container = Some((target, plan.container_name.clone()));
    check!(started);
    let target = &new_container.as_ref().expect("just set").0;

    progress.step(Verify, 5, "Health check, then switching the route");
    let health = &plan.health;
    let verify_limit = health.start_period
        + (health.interval + health.timeout) * (health.retries + 2)
        + Duration::from_secs(10);
    let verified = timed(Verify, verify_limit, async {
        // Probing may take a while; a cancel or a newer attempt ends it early.
        tokio::select! {
            probed = target.probe_until_healthy(&plan) => probed.map_err(|error| match error {
                ProbeError::Unhealthy(message) => stop(Verify, "health_check_failed", message),
                ProbeError::Unreachable(message) => Stop {
                    transient: true,
                    ..stop(Verify, "server_unreachable", message)
                },
            }),
            stopped = watch_interruption(context, namespace, deployment, Verify) => {
                Err(stopped)
            }
        }
    })
    .await;
    if verified
        .as_ref()
        .is_err_and(|s| s.state == DeploymentState::Failed)
    {
        // What the container said explains most failed checks; it goes with the container.
        record_log_tail(target, &plan, &progress.output()).await;
    }
    check!(verified);
    check!(interruption(context, namespace, deployment, Verify)?);
    let route_id = super::plan::route_id(namespace, &resource.name_any());
    let route = plan
        .route
        .as_ref()
        .map(|r| (r, plan.upstream.as_str(), plan.internal_port));
    check!(
        timed(Verify, PHASE_TIMEOUT, async {
            // The new container joins the resource's upstream name; the route names only that,
            // so the proxy's configuration changes on the first deploy (or a new host) only.
            let switched = async {
                if !first {
                    // A re-run may find its container already promoted: no rejoin then.
                    target.ensure_promoted(&plan).await?;
                }
                target.ensure_route(&route_id, route).await
            };
            switched
                .await
                .map(drop)
                .map_err(|e| stop(Verify, "route_switch_failed", e.to_string()))
        })
        .await
    );
    // From here the new container serves; the old ones stop taking connections on SIGTERM and
    // finish what they accepted before they exit (and leave the upstream name).
    let new_name = plan.container_name.clone();
    let (target, _) = new_container.take().expect("set above");
    // Only containers of older attempts go: a newer attempt may have started meanwhile, and its
    // container must survive this one's cleanup.
    let attempts = context
        .caches
        .deployments_of(namespace, &deployment.spec.resource_id);
    let newer_than_us = |started_by: &str| {
        attempts
            .iter()
            .find(|d| d.name_any() == started_by)
            .is_some_and(|d| is_newer(d, deployment))
    };
    let old = target
        .resource_containers(namespace, &resource.name_any())
        .await
        .unwrap_or_default();
    let retired = old
        .into_iter()
        .filter(|(name, started_by)| *name != new_name && !newer_than_us(started_by));
    for (name, _) in retired {
        if let Err(error) = target.retire(&name).await {
            tracing::warn!(%error, container = %name, "could not retire an old container");
        }
    }
    package::prune_built_images(&target, namespace, &resource.name_any(), &plan.image).await;
    Ok(Ok(()))
}

/// Resolves once the attempt must stop during a long `phase`. The cache follows the
/// Deployments through their watch, so looking costs no API request.
async fn watch_interruption(
    context: &Context,
    namespace: &str,
    deployment: &Deployment,
    phase: DeploymentPhase,
) -> Stop {
    loop {
        tokio::time::sleep(INTERRUPTION_POLL).await;
        if let Ok(Err(stopped)) = interruption(context, namespace, deployment, phase) {
            return stopped;
        }
    }
}

/// Whether the attempt must stop before `phase`: deleted, cancel requested, or superseded by a
/// newer attempt for the same resource. Read from the cache.
fn interruption(
    context: &Context,
    namespace: &str,
    deployment: &Deployment,
    phase: DeploymentPhase,
) -> Result<std::result::Result<(), Stop>> {
    let stopped = |code: &'static str, message: String| {
        Ok(Err(Stop {
            state: DeploymentState::Canceled,
            ..stop(phase, code, message)
        }))
    };
    let Some(fresh) = Caches::get(
        &context.caches.deployments,
        namespace,
        &deployment.name_any(),
    ) else {
        return Ok(Err(stop(phase, "deleted", "the Deployment was deleted")));
    };
    if fresh.spec.cancel_requested {
        return stopped("canceled", "canceled on request".into());
    }
    let attempts = context
        .caches
        .deployments_of(namespace, &deployment.spec.resource_id);
    if let Some(newer) = attempts.iter().rev().find(|d| is_newer(d, deployment)) {
        return stopped(
            "superseded",
            format!("superseded by the newer attempt {}", newer.name_any()),
        );
    }
    Ok(Ok(()))
}

/// Whether `a` was created after `b` (names break ties, so exactly one attempt is newest).
pub fn is_newer(a: &Deployment, b: &Deployment) -> bool {
    let key = |d: &Deployment| {
        (
            d.metadata.creation_timestamp.clone().map(|t| t.0),
            d.name_any(),
        )
    };
    key(a) > key(b)
}
