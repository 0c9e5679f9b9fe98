//! Roll-out: deploy, verify, and what follows a failure (the rollback of the attempt's own
//! container and, on a first deploy, its route). Split from [`super::phases`], whose helpers
//! (deadlines, stops) it uses.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use berth_crds::deployment::{Deployment, DeploymentErrorCode as Code, DeploymentPhase};
use berth_crds::masking::Masker;
use berth_crds::progress::Level;
use kube::ResourceExt;

use super::super::compose::{run::StackError, stack::Stack};
use super::super::diagnosis::{self, Evidence, Unhealthy};
use super::super::plan::{self, Plan};
use super::super::probe::ProbeError;
use super::super::progress::{OutputSink, Progress};
use super::super::server_target::start_or_reuse;
use super::phases::{Guard, Halt, PHASE_TIMEOUT, Stop, stop, stop_remote, timed};
use super::server::AttemptServer;
use crate::routes::RoutePlan;

use DeploymentPhase::{Deploy, Verify};

/// Deadline of bringing a stack's services up, `depends_on` conditions included.
const STACK_TIMEOUT: Duration = Duration::from_secs(300);
/// Lines of a failed container's output kept in the timeline.
const LOG_TAIL_LINES: usize = 50;

/// Deploy, verify, and what follows a failure: a stop removes only this attempt's new
/// container, while the old one keeps serving (on success, see [`retire_older`]). A container
/// that already joined the upstream name may hold requests: it is retired (SIGTERM, time to
/// answer them), not killed.
pub async fn roll_out(
    server: &impl AttemptServer,
    progress: &mut Progress<'_>,
    guard: &Guard<'_>,
    plan: &Plan,
    stack: Option<&Stack>,
) -> Result<(), Halt> {
    guard.check(Deploy)?;
    // Until an attempt succeeded, no route reaches the upstream name: the first container may
    // carry it from the start, which spares the rejoin in verify.
    let first = !guard.siblings.any_succeeded();
    let route_id = route_id_of(progress.deployment);
    let promoting = AtomicBool::new(false);
    // Boxed, so a debug build's poll frames do not hold both phases' whole state.
    let served = async {
        Box::pin(deploy(server, progress, plan, stack, first)).await?;
        Box::pin(verify(server, progress, guard, plan, first, &promoting)).await
    };
    match served.await {
        Ok(()) => Ok(()),
        Err(Halt::Stop(stopped)) => {
            progress.status.phase = Some(DeploymentPhase::Rollback);
            let name = &plan.container_name;
            let removed = match promoting.load(Ordering::Relaxed) {
                true => server.retire(name).await,
                false => server.remove_container(name).await.map(drop),
            };
            if let Err(error) = removed {
                tracing::warn!(%error, container = %name, "could not remove the failed container");
            }
            if first {
                // Written during the health check: a first deploy that failed leaves no route.
                if let Err(error) = server.ensure_route(&route_id, None).await {
                    tracing::warn!(%error, route = %route_id, "could not remove the failed route");
                }
            }
            Err(stopped.into())
        }
        Err(other) => Err(other),
    }
}

/// Deploy: a stack's other services brought up first, then the attempt's container started,
/// off the upstream name unless it is the `first`.
async fn deploy(
    server: &impl AttemptServer,
    progress: &mut Progress<'_>,
    plan: &Plan,
    stack: Option<&Stack>,
    first: bool,
) -> Result<(), Halt> {
    let label = format!("Starting container {}", plan.container_name);
    progress.step(Deploy, 4, &label);
    if let Some(stack) = stack {
        let output = progress.output();
        let up = async {
            server
                .bring_up_stack(stack)
                .await
                .map_err(|error| match error {
                    StackError::Remote(error) => stop_remote(Deploy, Code::DockerError, &error),
                    StackError::Service(message) => {
                        stop(Deploy, Code::ComposeServiceFailed, message)
                    }
                })
        };
        for line in timed(Deploy, STACK_TIMEOUT, up).await? {
            output.line(berth_crds::progress::OutputStream::Stdout, &line);
        }
        progress.status.stack = Some(stack.record());
        progress.write();
    }
    progress.status.container_id = Some(plan.container_name.clone());
    let started = async {
        let started = start_or_reuse(server, plan, first).await;
        started.map_err(|e| stop_remote(Deploy, Code::ContainerStartFailed, &e))
    };
    Ok(timed(Deploy, PHASE_TIMEOUT, started).await?)
}

/// Verify: the health check, then the new container joins the resource's upstream name and
/// the route is put in place (it names only that name, so the proxy's configuration changes on
/// the first deploy or a new host only).
async fn verify(
    server: &impl AttemptServer,
    progress: &mut Progress<'_>,
    guard: &Guard<'_>,
    plan: &Plan,
    first: bool,
    promoting: &AtomicBool,
) -> Result<(), Halt> {
    progress.step(Verify, 5, "Health check, then switching the route");
    let route_id = route_id_of(progress.deployment);
    let route = route_of(plan);
    let health = &plan.health;
    // Room for the evidence of a failure as well as the probes.
    let limit = health.start_period
        + (health.interval + health.timeout) * (health.retries + 2)
        + Duration::from_secs(10)
        + PHASE_TIMEOUT;
    let probed = async {
        match server.probe_until_healthy(plan).await {
            Ok(()) => Ok(()),
            Err(ProbeError::Unreachable(message)) => Err(Stop {
                transient: true,
                ..stop(Verify, Code::ServerUnreachable, message)
            }),
            Err(ProbeError::Unhealthy(unhealthy)) => {
                // What the container shows now explains the failure; it goes with the container.
                let evidence = server.failure_evidence(plan).await;
                record_log_tail(server, plan, &progress.output()).await;
                Err(explained(progress, plan, &unhealthy, &evidence))
            }
        }
    };
    let early_route = first_route(server, plan, &route_id, first);
    let (verified, early_route) = tokio::join!(guard.within(Verify, limit, probed), early_route);
    verified?;
    early_route?;
    guard.check(Verify)?;
    // Healthy: from here it serves (a first deploy's from the start) or is about to.
    promoting.store(true, Ordering::Relaxed);
    // The restart policy and the route are independent: set at once.
    let routed = async {
        if first {
            return Ok(false);
        }
        // A re-run may find its container promoted already: no rejoin then.
        server.ensure_promoted(plan).await?;
        server.ensure_route(&route_id, route).await
    };
    let switched = async {
        let (_, routed) = tokio::try_join!(server.release_restarts(plan), routed)?;
        Ok::<_, berth_remote::RemoteError>(routed)
    };
    let switched = async {
        let switched = switched.await.map(drop);
        switched.map_err(|e| stop(Verify, Code::RouteSwitchFailed, e.to_string()))
    };
    Ok(timed(Verify, PHASE_TIMEOUT, switched).await?)
}

/// On the first deploy nothing else serves the upstream name: its route is written while the
/// probe runs (until the app answers, the proxy's failure page explains why). Not before the
/// container started: until then its name does not resolve on the edge network, and the proxy's
/// lookup of an unknown name waits on the server's outside resolver (measured: the first 200
/// came 0.8 s later). Later deploys switch after the health check.
async fn first_route(
    server: &impl AttemptServer,
    plan: &Plan,
    route_id: &str,
    first: bool,
) -> Result<(), Halt> {
    if !first {
        return Ok(());
    }
    let routed = server.ensure_route(route_id, route_of(plan)).await;
    routed
        .map_err(|e| stop(Verify, Code::RouteSwitchFailed, e.to_string()).into())
        .map(drop)
}

/// Where the plan routes: its host and path, to its upstream name and port.
fn route_of(plan: &Plan) -> Option<(&RoutePlan, &str, u16)> {
    let route = plan.route.as_ref().zip(plan.internal_port);
    route.map(|(r, port)| (r, plan.upstream.as_str(), port))
}

/// The edge proxy's route of the attempt's resource.
fn route_id_of(deployment: &Deployment) -> String {
    let namespace = deployment.namespace().unwrap_or_default();
    plan::route_id(&namespace, &deployment.spec.resource_id)
}

/// The failed check's cause as the attempt's error (secrets masked), its evidence noted in the
/// timeline.
fn explained(
    progress: &Progress<'_>,
    plan: &Plan,
    unhealthy: &Unhealthy,
    evidence: &Evidence,
) -> Stop {
    let masker = Masker::new(plan.secret_values.iter().chain(plan.build_args.values()));
    let start_command = plan.start_command.as_deref();
    let diagnosis = diagnosis::diagnose(&plan.health, start_command, unhealthy, evidence);
    let ports = evidence
        .listening
        .as_ref()
        .map_or("unknown".into(), |ports| {
            match ports
                .reachable
                .iter()
                .map(u16::to_string)
                .collect::<Vec<_>>()
                .join(", ")
            {
                none if none.is_empty() => "none".to_string(),
                some => some,
            }
        });
    let exit = evidence.exit_code.map_or("none".into(), |c| c.to_string());
    progress.note(
        Level::Warn,
        format!(
            "evidence: running {}, exit code {exit}, OOM-killed {}, restarts {}, listening ports \
             {ports}; {} probe(s) over {}s",
            evidence.running,
            evidence.oom_killed,
            evidence.restarts,
            unhealthy.tries,
            unhealthy.waited.as_secs()
        ),
    );
    stop(Verify, diagnosis.code, masker.mask(&diagnosis.message))
}

/// Records the last lines of the new container's output, masked, in the attempt's timeline.
async fn record_log_tail(server: &impl AttemptServer, plan: &Plan, output: &OutputSink) {
    let tail = tokio::time::timeout(
        PHASE_TIMEOUT,
        server.log_tail(&plan.container_name, LOG_TAIL_LINES),
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
