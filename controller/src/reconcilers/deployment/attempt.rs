//! Running one attempt: every phase under its own deadline, the status written as it goes, a
//! cancel or a newer attempt honoured between phases, and a failed verify rolled back.

use std::future::Future;
use std::time::Duration;

use berth_crds::deployment::{Deployment, DeploymentError, DeploymentPhase, DeploymentState};
use berth_crds::progress::Level;
use berth_crds::resource::Resource;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::runtime::events::EventType;
use kube::{Api, Resource as _, ResourceExt};

use super::connect;
use super::package;
use super::package::Masker;
use super::plan::plan;
pub use super::progress::TOTAL_STEPS;
use super::progress::{OutputSink, Progress};
use super::runtime::Target;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::status::apply_status;

/// How long the old container keeps serving requests it already accepted after the switch.
const DRAIN: Duration = Duration::from_secs(2);
/// How often a running verify looks for a cancel request or a newer attempt.
const INTERRUPTION_POLL: Duration = Duration::from_secs(1);
/// Deadline of the detect, plan and deploy phases (package has its own, see `package`).
const PHASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Why an attempt stopped early.
struct Stop {
    state: DeploymentState,
    phase: DeploymentPhase,
    code: &'static str,
    message: String,
}

fn stop(phase: DeploymentPhase, code: &'static str, message: impl Into<String>) -> Stop {
    Stop {
        state: DeploymentState::Failed,
        phase,
        code,
        message: message.into(),
    }
}

/// Runs (or re-runs, after a restart) the attempt to its end.
pub async fn run(context: &Context, deployment: &Deployment) -> Result<()> {
    let namespace = deployment
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let mut progress = Progress::start(
        Api::namespaced(context.client.clone(), &namespace),
        deployment,
        context.timeline.clone(),
    );
    if progress.status.started_at.is_some() {
        // Started before and never ended: the controller stopped (or lost a write) midway.
        progress.note(
            Level::Warn,
            "the attempt was interrupted (controller restart or a lost status write); it runs \
             again from the start",
        );
    }
    progress.status.status = Some(DeploymentState::Running);
    progress.status.started_at = Some(Time(Timestamp::now()));
    progress.status.finished_at = None;
    progress.status.last_error = None;
    let mut new_container = None;
    let outcome = phases(context, &namespace, &mut progress, &mut new_container).await?;
    let Err(stopped) = outcome else {
        return progress.end(DeploymentState::Succeeded, None).await;
    };
    // Whatever stopped the attempt, the old container keeps serving: remove only the new one.
    if let Some((target, name)) = new_container {
        progress.status.phase = Some(DeploymentPhase::Rollback);
        if let Err(error) = Target::remove_container(&target, &name).await {
            tracing::warn!(%error, container = %name, "could not remove the failed container");
        }
    }
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
    progress.end(stopped.state, Some(error)).await
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
        interruption(context, namespace, deployment, Detect),
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
        interruption(context, namespace, deployment, Plan),
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

    check!(interruption(context, namespace, deployment, Package).await?);
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
    check!(interruption(context, namespace, deployment, Deploy).await?);
    let label = format!("Starting container {}", plan.container_name);
    progress.step(Deploy, 4, &label);
    progress.status.container_id = Some(plan.container_name.clone());
    let started = timed(Deploy, PHASE_TIMEOUT, async {
        target
            .start_container(&plan)
            .await
            .map_err(|e| stop(Deploy, "container_start_failed", e.to_string()))
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
            probed = target.probe_until_healthy(&plan) => {
                probed.map_err(|message| stop(Verify, "health_check_failed", message))
            }
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
    check!(interruption(context, namespace, deployment, Verify).await?);
    let route_id = super::plan::route_id(namespace, &resource.name_any());
    let switch = plan
        .route
        .as_ref()
        .map(|r| (r, plan.container_name.as_str(), plan.internal_port));
    check!(
        timed(Verify, PHASE_TIMEOUT, async {
            target
                .switch_route(&route_id, switch)
                .await
                .map_err(|e| stop(Verify, "route_switch_failed", e.to_string()))
        })
        .await
    );
    // From here the new container serves; the old ones only finish what they accepted.
    let new_name = plan.container_name.clone();
    let (target, _) = new_container.take().expect("set above");
    tokio::time::sleep(DRAIN).await;
    // Only containers of older attempts go: a newer attempt may have started meanwhile, and its
    // container must survive this one's cleanup.
    let api = Api::<Deployment>::namespaced(context.client.clone(), namespace);
    let attempts = api.list(&ListParams::default()).await?.items;
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

/// Resolves once the attempt must stop during a long `phase`; API faults just mean another
/// look later.
async fn watch_interruption(
    context: &Context,
    namespace: &str,
    deployment: &Deployment,
    phase: DeploymentPhase,
) -> Stop {
    loop {
        tokio::time::sleep(INTERRUPTION_POLL).await;
        if let Ok(Err(stopped)) = interruption(context, namespace, deployment, phase).await {
            return stopped;
        }
    }
}

/// Whether the attempt must stop before `phase`: cancel requested, or superseded by a newer
/// attempt for the same resource.
async fn interruption(
    context: &Context,
    namespace: &str,
    deployment: &Deployment,
    phase: DeploymentPhase,
) -> Result<std::result::Result<(), Stop>> {
    let api = Api::<Deployment>::namespaced(context.client.clone(), namespace);
    // Both reads at once: this check runs before every phase, on the attempt's critical path.
    let name = deployment.name_any();
    let everything = ListParams::default();
    let (fresh, all) = tokio::try_join!(api.get_opt(&name), api.list(&everything))?;
    let Some(fresh) = fresh else {
        return Ok(Err(stop(phase, "deleted", "the Deployment was deleted")));
    };
    if fresh.spec.cancel_requested {
        let mut status = fresh.status.clone().unwrap_or_default();
        status.status = Some(DeploymentState::CancelRequested);
        apply_status(&api, &fresh, fresh.status.as_ref(), &status).await?;
        return Ok(Err(Stop {
            state: DeploymentState::Canceled,
            phase,
            code: "canceled",
            message: "canceled on request".into(),
        }));
    }
    let newer = all
        .items
        .iter()
        .filter(|d| d.spec.resource_id == deployment.spec.resource_id)
        .filter(|d| is_newer(d, deployment))
        .map(|d| d.name_any())
        .next();
    if let Some(newer) = newer {
        return Ok(Err(Stop {
            state: DeploymentState::Canceled,
            phase,
            code: "superseded",
            message: format!("superseded by the newer attempt {newer}"),
        }));
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
