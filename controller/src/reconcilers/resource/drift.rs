//! Drift repair: the serving container and its route checked against what the server's
//! observer saw, and mended when they drifted (a container stopped, removed or restarted by
//! hand or by Docker, a stack service gone, a stray container of an old attempt, a proxy that
//! lost its route).

use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::{ProxyRouteStatus, Resource};
use berth_observations::TimelineKey;
use berth_remote::ServerId;
use kube::runtime::events::EventType;
use kube::{Resource as _, ResourceExt};

use super::attempts::{serving, state};
use super::route::restore_route;
use super::runtime;
use super::{crash_evidence, stack_repair};
use crate::context::Context;
use crate::observer::{Connectivity, Death, ObservedServer};
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::deployment::{config, connect, plan};
use crate::reconcilers::event_reason;

/// Whether the serving container runs and its route is in place, from what the server's
/// observer saw; only a change it reported (a container stopped or gone, a restarted proxy)
/// costs a round trip to the server, to repair it. Skipped while an attempt runs. A runtime
/// `stopped` on request is kept stopped instead, and its route does not serve.
pub(super) async fn check_serving(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    deployments: &[Deployment],
    stopped: bool,
) -> ProxyRouteStatus {
    let Some(current) = serving(deployments) else {
        return ProxyRouteStatus::NotReady;
    };
    let busy = deployments
        .iter()
        .any(|d| !state(d).is_some_and(DeploymentState::is_terminal));
    if busy {
        return ProxyRouteStatus::Ready;
    }
    let id = ServerId {
        namespace: namespace.to_string(),
        name: current.spec.server_id.clone(),
    };
    let previous = resource.status.as_ref().and_then(|s| s.proxy_route_status);
    let Some(observed) = context.observers.get(&id) else {
        return previous.unwrap_or(ProxyRouteStatus::Unknown);
    };
    match observed.connectivity() {
        // Nothing known yet since the controller started: what was reported still stands.
        Connectivity::Starting => return previous.unwrap_or(ProxyRouteStatus::Unknown),
        Connectivity::Lost => return ProxyRouteStatus::Unknown,
        Connectivity::Live => {}
    }
    mend(
        resource,
        context,
        namespace,
        deployments,
        current,
        &observed,
        stopped,
    )
    .await
}

/// Mends what the live observer of the serving attempt's server reports drifted: stray
/// containers, a runtime to keep stopped, a restart to record, stack services, the serving
/// container and its route.
async fn mend(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    deployments: &[Deployment],
    current: &Deployment,
    observed: &ObservedServer,
    stopped: bool,
) -> ProxyRouteStatus {
    let name = resource.name_any();
    let strays = stray_containers(observed, namespace, &name, deployments, current);
    if !strays.is_empty() {
        remove_strays(
            resource,
            context,
            namespace,
            &current.spec.server_id,
            strays,
        )
        .await;
    }
    let container = plan::container_name(namespace, &name, &current.name_any());
    let running = observed.container(&container).is_some_and(|c| c.running);
    if stopped {
        if running {
            runtime::keep_stopped(
                resource,
                context,
                &current.spec.server_id,
                namespace,
                &container,
            )
            .await;
        }
        return ProxyRouteStatus::NotReady;
    }
    // A death is taken only once the container runs again: drift repair takes the ones it
    // sees stopped, and the index may still say stopped when Docker has restarted it already.
    if !running && context.holds.held(&container).is_some() {
        // Stopped by Berth for a while (a volume restored or quiesced): left as it is.
        return ProxyRouteStatus::NotReady;
    }
    if running && let Some(death) = observed.take_death(&container) {
        // Docker's restart policy started it again before drift repair saw it stopped, unless
        // the stop was Berth's own.
        if !context.holds.explains_exit(&container) {
            record_restarted(resource, context, namespace, current, &death).await;
        }
    }
    if stack_repair::is_stack(resource) && stack_repair::needs_repair(observed, resource, current) {
        repair_stack(resource, context, namespace, current, observed).await;
    }
    let route_check = observed.route_check_due(namespace, &name);
    if running && route_check.is_none() {
        return ProxyRouteStatus::Ready;
    }
    let suspect = (!running).then_some(observed);
    let repaired = repair(resource, context, namespace, current, suspect).await;
    if let (ProxyRouteStatus::Ready, Some(epoch)) = (repaired, route_check) {
        observed.confirm_route(namespace, &name, epoch);
    }
    repaired
}

/// Containers of attempts that ended without serving: left behind when their removal failed
/// (the server unreachable at the time), and perhaps started again by Docker since. Containers
/// of attempts the cache does not know (yet) are left alone.
fn stray_containers(
    observed: &ObservedServer,
    namespace: &str,
    resource: &str,
    deployments: &[Deployment],
    serving: &Deployment,
) -> Vec<String> {
    let ended = |attempt: &str| {
        deployments
            .iter()
            .find(|d| d.name_any() == attempt)
            .is_some_and(|d| state(d).is_some_and(DeploymentState::is_terminal))
    };
    observed
        .containers_of(namespace, resource)
        .into_iter()
        // A stack's long-lived services belong to the stack, not to the attempt that started them.
        .filter(|c| !c.owner.as_ref().is_some_and(|o| o.sidecar))
        .filter_map(|c| Some((c.name, c.owner?.deployment)))
        .filter(|(_, attempt)| *attempt != serving.name_any() && ended(attempt))
        .map(|(name, _)| name)
        .collect()
}

async fn remove_strays(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    server: &str,
    strays: Vec<String>,
) {
    let Ok((_, target)) = connect(context, namespace, server).await else {
        return;
    };
    for container in strays {
        let note = match target.retire(&container).await {
            Ok(()) => format!("removed container {container} of an attempt that no longer serves"),
            Err(error) => {
                tracing::warn!(%error, %container, "could not remove a stray container");
                continue;
            }
        };
        context
            .publish_event(
                &resource.object_ref(&()),
                EventType::Normal,
                event_reason::STRAY_REMOVED,
                note,
            )
            .await;
    }
}

/// Starts the serving container again when it was stopped, or recreates it when it was
/// removed (`container_suspect`: the index says it does not run), then writes its route again
/// if the edge proxy lost it. Returns the route status.
async fn repair(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    current: &Deployment,
    container_suspect: Option<&ObservedServer>,
) -> ProxyRouteStatus {
    let Ok((server, target)) = connect(context, namespace, &current.spec.server_id).await else {
        return ProxyRouteStatus::Unknown;
    };
    let Ok(mut plan) = plan::plan(
        resource,
        &server,
        &current.name_any(),
        current.spec.source_snapshot.as_ref(),
        &context.caches.storage_volumes_of(resource),
    ) else {
        return ProxyRouteStatus::Failed;
    };
    if let Some(observed) = container_suspect {
        // A recreated container gets the configuration as it is now: the old one's is gone.
        config::apply_serving(context, namespace, resource, current, &mut plan);
        if stack_repair::is_stack(resource) {
            plan.compose = stack_repair::routed_settings(context, current, &plan).await;
        }
        let key = TimelineKey::new(namespace, resource.name_any(), current.name_any());
        let restored = restore_container(resource, context, observed, &target, &plan, &key);
        if let Err(status) = restored.await {
            return status;
        }
    }
    if let Err(error) = target.ensure_promoted(&plan).await {
        tracing::warn!(%error, resource = %resource.name_any(), "could not check the upstream name");
        return ProxyRouteStatus::Unknown;
    }
    restore_route(resource, context, namespace, &target, &plan).await
}

/// Brings the serving stack's other services back (see `stack_repair`).
async fn repair_stack(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    current: &Deployment,
    observed: &ObservedServer,
) {
    let Ok((server, target)) = connect(context, namespace, &current.spec.server_id).await else {
        return;
    };
    let Some(mut plan) = stack_repair::plan_of(
        resource,
        &server,
        current,
        &context.caches.storage_volumes_of(resource),
    ) else {
        return;
    };
    config::apply_serving(context, namespace, resource, current, &mut plan);
    stack_repair::repair(resource, context, observed, &target, current, &plan).await;
}

/// Crash evidence for a serving container Docker restarted by itself: the exit code and OOM
/// flag the observer saw, and its last lines of output.
async fn record_restarted(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    current: &Deployment,
    death: &Death,
) {
    let Ok((server, target)) = connect(context, namespace, &current.spec.server_id).await else {
        return;
    };
    let plan = plan::plan(
        resource,
        &server,
        &current.name_any(),
        current.spec.source_snapshot.as_ref(),
        &context.caches.storage_volumes_of(resource),
    );
    let Ok(mut plan) = plan else { return };
    // The masker needs the secret values the container runs with.
    config::apply_serving(context, namespace, resource, current, &mut plan);
    let key = TimelineKey::new(namespace, resource.name_any(), current.name_any());
    crash_evidence::record_restarted(context, &target, &plan, &key, death).await;
}

/// Starts or recreates the serving container when Docker confirms it is stopped or gone (the
/// observer's index may lag behind a container the attempt just started).
async fn restore_container(
    resource: &Resource,
    context: &Context,
    observed: &ObservedServer,
    target: &Target,
    plan: &plan::Plan,
    timeline: &TimelineKey,
) -> std::result::Result<(), ProxyRouteStatus> {
    let repaired = match target.running(&plan.container_name).await {
        // Restarted by Docker already: its death's evidence is taken once the index shows it.
        Ok(Some(true)) => return Ok(()),
        Ok(Some(false)) => {
            crash_evidence::record(context, target, plan, timeline).await;
            // The evidence of this stop is recorded: not again when the container runs.
            observed.take_death(&plan.container_name);
            target.start(&plan.container_name).await.map(|()| "started")
        }
        Ok(None) => target
            .start_container(plan, true)
            .await
            .map(|()| "recreated"),
        Err(_) => return Err(ProxyRouteStatus::Unknown),
    };
    let reference = resource.object_ref(&());
    match repaired {
        Ok(verb) => {
            let note = format!(
                "managed container {} was gone or stopped; {verb} it",
                plan.container_name
            );
            context
                .publish_event(
                    &reference,
                    EventType::Normal,
                    event_reason::DRIFT_REPAIRED,
                    note,
                )
                .await;
            Ok(())
        }
        Err(error) => {
            let note = format!(
                "could not restore container {}: {error}",
                plan.container_name
            );
            context
                .publish_event(
                    &reference,
                    EventType::Warning,
                    event_reason::DRIFT_REPAIR_FAILED,
                    note,
                )
                .await;
            Err(ProxyRouteStatus::Failed)
        }
    }
}
