//! Resource: starts a Deployment when its spec calls for one, reports deployments and the access
//! summary, restores a managed container removed or stopped by hand, and removes containers and
//! route when the Resource is deleted.

use std::collections::BTreeSet;
use std::sync::Arc;

use berth_crds::GENERATION_ANNOTATION;
use berth_crds::condition::{self, Condition, ConditionStatus, READY, wire_time};
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::{
    AccessSummary, AppliedAccessRoute, PlannedAccessRoute, ProxyRouteStatus, Resource,
    ResourceStatus, reason,
};
use berth_crds::runtime_control::DesiredRuntimeState;
use berth_crds::server::{ProxyKind, Server};
use futures::channel::mpsc::UnboundedReceiver;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::{ObjectRef, ReflectHandle};
use kube::{Api, Resource as _, ResourceExt};

use super::config_triggers as triggers;
use super::deployment::plan::{self, ROUTE_SCHEME};
use super::deployment::runtime::Target;
use super::deployment::{compose, config, connect, package};
use super::domain_routes::domain_routes;
use super::fresh::with_current_finalizers;
use super::stack_repair;
use super::{RESYNC_AFTER, drain, error_policy};
use super::{crash_evidence, runtime_control, runtime_state};
use crate::cache::{Caches, changed_by, digest};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::observer::{Connectivity, Death, ObservedServer};
use crate::status::apply_status;
use berth_observations::TimelineKey;
use berth_remote::ServerId;

const KIND: &str = "Resource";
/// Removes the resource's containers and route before it goes away.
pub const FINALIZER: &str = "berth.dev/resource-cleanup";

/// What the Resource controller reacts to, besides the server observers' wake-ups.
pub struct Inputs {
    pub resources: ReflectHandle<Resource>,
    pub deployments: ReflectHandle<Deployment>,
    pub secrets: ReflectHandle<Secret>,
    pub environments: ReflectHandle<Environment>,
    pub projects: ReflectHandle<Project>,
    pub organizations: ReflectHandle<Organization>,
    pub domain_bindings: ReflectHandle<DomainBinding>,
    pub woken: UnboundedReceiver<ObjectRef<Resource>>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    // A Deployment's progress steps change nothing a Resource reports: only its outcome does.
    let outcomes = changed_by(inputs.deployments, |deployment: &Deployment| {
        digest(format!("{:?}", state(deployment)))
    });
    let caches = &context.caches;
    let (by_secret, by_environment, by_project, by_organization) = (
        caches.resources.clone(),
        caches.resources.clone(),
        caches.resources.clone(),
        caches.resources.clone(),
    );
    let stream = Controller::for_shared_stream(inputs.resources, caches.resources.clone())
        .watches_shared_stream(outcomes, |deployment| {
            Some(ObjectRef::new(&deployment.spec.resource_id).within(&deployment.namespace()?))
        })
        // Configuration changes outside the Resource: auto-deploy acts on them at once.
        .watches_shared_stream(triggers::secret_changes(inputs.secrets), move |secret| {
            triggers::resources_of_secret(&by_secret, &secret)
        })
        .watches_shared_stream(
            triggers::spec_changes(inputs.environments),
            move |environment| triggers::resources_of_environment(&by_environment, &environment),
        )
        .watches_shared_stream(triggers::spec_changes(inputs.projects), move |project| {
            triggers::resources_of_project(&by_project, &project)
        })
        .watches_shared_stream(
            triggers::spec_changes(inputs.organizations),
            move |organization| {
                triggers::resources_of_organization(&by_organization, &organization)
            },
        )
        // A domain binding's URL or readiness: the access summary's domain routes.
        .watches_shared_stream(
            changed_by(inputs.domain_bindings, |binding: &DomainBinding| {
                let status = binding.status.as_ref();
                digest(format!(
                    "{:?}{:?}",
                    status.and_then(|s| s.url.clone()),
                    status.map(|s| &s.conditions)
                ))
            }),
            |binding| Some(ObjectRef::new(&binding.spec.resource_id).within(&binding.namespace()?)),
        )
        // The server's observer: a managed container stopped, died or vanished, or the edge
        // proxy restarted without routes.
        .reconcile_on(inputs.woken)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

async fn reconcile(resource: Arc<Resource>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = resource
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<Resource>::namespaced(context.client.clone(), &namespace);
    let Some(resource) = with_current_finalizers(&api, resource, FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    finalizer(&api, FINALIZER, resource, |event| async {
        match event {
            FinalizerEvent::Apply(resource) => apply(&resource, &context, &namespace).await,
            FinalizerEvent::Cleanup(resource) => cleanup(&resource, &context, &namespace).await,
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// The resource's deployments from the cache, oldest first.
fn deployments_of(context: &Context, namespace: &str, resource: &str) -> Vec<Deployment> {
    context
        .caches
        .deployments_of(namespace, resource)
        .into_iter()
        .map(|d| d.as_ref().clone())
        .collect()
}

/// Whether the resource's current spec needs a new attempt: it names a server and a source of a
/// kind Berth deploys (an image, or a local folder to build), no attempt was started for this
/// generation yet, and either it never deployed or auto-deploy is on and not blocked by a
/// changed source binding.
pub fn needs_deployment(resource: &Resource, deployments: &[Deployment]) -> bool {
    let deployable = resource.spec.server_id.is_some()
        && resource.spec.source.is_some()
        && resource.spec.check_support().is_ok();
    let generation = resource.metadata.generation.unwrap_or(0).to_string();
    let covered = deployments
        .iter()
        .any(|d| d.annotations().get(GENERATION_ANNOTATION) == Some(&generation));
    let policy = &resource.spec.auto_deploy;
    let auto = policy.enabled && !policy.blocked(resource.spec.source.as_ref());
    deployable && !covered && (deployments.is_empty() || auto)
}

/// The Deployment the resource's current generation gets.
pub fn new_deployment(resource: &Resource, first: bool) -> Deployment {
    let generation = resource.metadata.generation.unwrap_or(0);
    let name = format!("dep-{}-{generation}", resource.name_any());
    let trigger = if first {
        "resource-created"
    } else {
        "auto-deploy"
    };
    let server_id = resource.spec.server_id.clone().unwrap_or_default();
    let destination_id = resource.spec.destination_id.clone();
    Deployment::of_resource(&name, resource, server_id, destination_id, trigger)
}

async fn apply(resource: &Resource, context: &Context, namespace: &str) -> Result<Action> {
    let name = resource.name_any();
    let mut deployments = deployments_of(context, namespace, &name);
    let recorded = attempts_ever(context, namespace, &name, &deployments).await;
    let wanted = if needs_deployment(resource, &deployments) {
        Some(new_deployment(resource, deployments.is_empty()))
    } else {
        config_redeployment(resource, context, namespace, &deployments, recorded.len())
    };
    let mut attempts = recorded;
    if let Some(deployment) = wanted {
        let api = Api::<Deployment>::namespaced(context.client.clone(), namespace);
        match api.create(&PostParams::default(), &deployment).await {
            Ok(created) => {
                attempts.insert(created.name_any());
                deployments.push(created);
            }
            // The cache had not seen our own earlier create yet.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(error) => return Err(error.into()),
        }
    }
    prune_history(resource, context, namespace, &deployments, &attempts).await?;
    let server = resource
        .spec
        .server_id
        .as_ref()
        .and_then(|id| Caches::get(&context.caches.servers, namespace, id));
    // A stop, start or restart asked for in spec.runtime goes first: drift repair below then
    // keeps the runtime in the state it leaves.
    let control =
        runtime_control::carry_out(resource, context, namespace, serving(&deployments)).await?;
    let stopped = control.applied() == DesiredRuntimeState::Stopped;
    // What woke this reconcile (a container that stopped, say) is recorded before drift repair
    // mends it; the repaired state arrives with the next event.
    let mut seen = runtime_state::observe(context, namespace, &name, serving(&deployments));
    if stopped {
        seen = runtime_state::stopped_on_request(seen);
    }
    let route_status = check_serving(resource, context, namespace, &deployments, stopped).await;
    let mut status = desired_status(
        resource,
        server.as_deref(),
        &deployments,
        Observed {
            route_status,
            runtime: seen,
            stopped,
        },
        Timestamp::now(),
    );
    status.deployment_count = i64::try_from(attempts.len()).unwrap_or(i64::MAX);
    status.runtime_control = control.control;
    let bindings: Vec<Arc<DomainBinding>> = context
        .caches
        .domain_bindings
        .state()
        .into_iter()
        .filter(|b| b.namespace().as_deref() == Some(namespace) && b.spec.resource_id == name)
        .collect();
    let (durable, applied) = domain_routes(
        bindings.iter().map(AsRef::as_ref),
        serving(&deployments),
        plan::internal_port(resource)
            .ok()
            .flatten()
            .map_or(0, i64::from),
    );
    if let Some(summary) = status.access_summary.as_mut() {
        summary.latest_durable_domain_route = durable;
        summary.latest_server_applied_domain_route = applied;
    }
    let api = Api::<Resource>::namespaced(context.client.clone(), namespace);
    apply_status(&api, resource, control.written.as_ref(), &status).await?;
    Ok(Action::requeue(if control.retry_soon {
        runtime_control::RETRY_AFTER
    } else {
        RESYNC_AFTER
    }))
}

/// Every attempt the resource ever had: the Deployment objects, and the older attempts whose
/// objects were removed but whose timelines the observation store still keeps.
async fn attempts_ever(
    context: &Context,
    namespace: &str,
    resource: &str,
    deployments: &[Deployment],
) -> BTreeSet<String> {
    let mut attempts: BTreeSet<String> = deployments.iter().map(|d| d.name_any()).collect();
    match context.timeline.attempts(namespace, resource).await {
        Ok(recorded) => attempts.extend(recorded),
        Err(error) => tracing::warn!(%error, resource, "could not count past attempts"),
    }
    attempts
}

/// With auto-deploy on and nothing running, a configuration that changed since the latest
/// attempt (a secret rotated, an environment variable set…: nothing that bumps the Resource's
/// generation) gets a new attempt, like a spec change does. `attempts` (every attempt the
/// resource ever had) keeps the name unique even after old attempts were removed.
fn config_redeployment(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    deployments: &[Deployment],
    attempts: usize,
) -> Option<Deployment> {
    let policy = &resource.spec.auto_deploy;
    if !policy.enabled || policy.blocked(resource.spec.source.as_ref()) {
        return None;
    }
    let latest = deployments.last()?;
    let status = latest.status.as_ref();
    let idle = status
        .and_then(|s| s.status)
        .is_some_and(DeploymentState::is_terminal);
    // Attempts from before fingerprints existed say nothing about what changed.
    let used = status.and_then(|s| s.config_fingerprint.as_ref())?;
    if !idle || !config_sources_remain(context, namespace, resource) {
        return None;
    }
    let entries = config::lasting_entries(context, namespace, resource);
    if berth_crds::config::fingerprint(&entries) == *used {
        return None;
    }
    let mut deployment = new_deployment(resource, false);
    let name = format!("{}-c{attempts}", deployment.name_any());
    deployment.metadata.name = Some(name);
    deployment.spec.trigger = Some("config-change".into());
    Some(deployment)
}

/// Whether the resource's organization, project and environment still exist and are not being
/// deleted: when they go (deleting an organization takes its namespace and everything in it),
/// their variables and secrets leaving is a deletion, not a configuration change to deploy.
fn config_sources_remain(context: &Context, namespace: &str, resource: &Resource) -> bool {
    let caches = &context.caches;
    let project = Caches::get(&caches.projects, namespace, &resource.spec.project_id);
    let environment = Caches::get(
        &caches.environments,
        namespace,
        &resource.spec.environment_id,
    );
    let organization_deleting = caches.organizations.state().iter().any(|o| {
        berth_crds::organization::Organization::namespace_name(&o.name_any()) == namespace
            && o.metadata.deletion_timestamp.is_some()
    });
    !organization_deleting
        && project.is_some_and(|p| p.metadata.deletion_timestamp.is_none())
        && environment.is_some_and(|e| e.metadata.deletion_timestamp.is_none())
}

/// Removes finished attempts beyond `spec.deploymentHistoryLimit`, oldest first, once their
/// timeline is stored (`recorded`); the running and the serving attempt always stay.
async fn prune_history(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    deployments: &[Deployment],
    recorded: &BTreeSet<String>,
) -> Result<()> {
    let expired = expired_attempts(deployments, resource.spec.deployment_history_limit());
    let api = Api::<Deployment>::namespaced(context.client.clone(), namespace);
    for deployment in expired {
        let name = deployment.name_any();
        if !recorded.contains(&name) {
            continue;
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::debug!(deployment = %name, "removed an attempt beyond the history limit")
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// The attempts beyond the newest `limit`, oldest first, that are neither running nor serving.
pub fn expired_attempts(deployments: &[Deployment], limit: usize) -> Vec<&Deployment> {
    let serving = serving(deployments).map(|d| d.name_any());
    let excess = deployments.len().saturating_sub(limit);
    deployments[..excess]
        .iter()
        .filter(|d| state(d).is_some_and(DeploymentState::is_terminal))
        .filter(|d| Some(d.name_any()) != serving)
        .collect()
}

/// The attempt now serving: the newest succeeded one, unless a newer attempt is still running.
fn serving(deployments: &[Deployment]) -> Option<&Deployment> {
    deployments
        .iter()
        .rev()
        .find(|d| state(d) == Some(DeploymentState::Succeeded))
}

fn state(deployment: &Deployment) -> Option<DeploymentState> {
    deployment.status.as_ref().and_then(|s| s.status)
}

/// Whether the serving container runs and its route is in place, from what the server's
/// observer saw; only a change it reported (a container stopped or gone, a restarted proxy)
/// costs a round trip to the server, to repair it. Skipped while an attempt runs. A runtime
/// `stopped` on request is kept stopped instead, and its route does not serve.
async fn check_serving(
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
    let name = resource.name_any();
    let strays = stray_containers(&observed, namespace, &name, deployments, current);
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
            keep_stopped(
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
    if running && let Some(death) = observed.take_death(&container) {
        // Docker's restart policy started it again before drift repair saw it stopped.
        record_restarted(resource, context, namespace, current, &death).await;
    }
    if stack_repair::is_stack(resource) && stack_repair::needs_repair(&observed, resource, current)
    {
        repair_stack(resource, context, namespace, current, &observed).await;
    }
    let route_check = observed.route_check_due(namespace, &name);
    if running && route_check.is_none() {
        return ProxyRouteStatus::Ready;
    }
    let suspect = (!running).then_some(observed.as_ref());
    let repaired = repair(resource, context, namespace, current, suspect).await;
    if let (ProxyRouteStatus::Ready, Some(epoch)) = (repaired, route_check) {
        observed.confirm_route(namespace, &name, epoch);
    }
    repaired
}

/// Stops the serving container again when it runs although the runtime is to stay stopped
/// (started by hand, or by Docker's restart policy): drift repair the other way round.
async fn keep_stopped(
    resource: &Resource,
    context: &Context,
    server: &str,
    namespace: &str,
    container: &str,
) {
    let Ok((_, target)) = connect(context, namespace, server).await else {
        return;
    };
    // The observer's index may lag behind a stop that just happened.
    if target.running(container).await.ok().flatten() != Some(true) {
        return;
    }
    let note = match target.stop(container, runtime_control::STOP_GRACE).await {
        Ok(_) => format!("container {container} ran although the runtime is stopped; stopped it"),
        Err(error) => {
            tracing::warn!(%error, %container, "could not keep the container stopped");
            return;
        }
    };
    context
        .publish_event(
            &resource.object_ref(&()),
            EventType::Normal,
            "DriftRepaired",
            note,
        )
        .await;
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
                "StrayRemoved",
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
        apply_current_config(context, namespace, resource, current, &mut plan);
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
    apply_current_config(context, namespace, resource, current, &mut plan);
    stack_repair::repair(resource, context, observed, &target, current, &plan).await;
}

/// The serving attempt's configuration as it is now (lasting scopes and the attempt's own).
fn apply_current_config(
    context: &Context,
    namespace: &str,
    resource: &Resource,
    current: &Deployment,
    plan: &mut plan::Plan,
) {
    let entries = config::lasting_entries(context, namespace, resource)
        .into_iter()
        .chain(berth_crds::config::deployment_entries(
            &current.name_any(),
            &current.spec.variables,
        ))
        .collect();
    config::apply_to(plan, entries);
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
    apply_current_config(context, namespace, resource, current, &mut plan);
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
                .publish_event(&reference, EventType::Normal, "DriftRepaired", note)
                .await;
            Ok(())
        }
        Err(error) => {
            let note = format!(
                "could not restore container {}: {error}",
                plan.container_name
            );
            context
                .publish_event(&reference, EventType::Warning, "DriftRepairFailed", note)
                .await;
            Err(ProxyRouteStatus::Failed)
        }
    }
}

/// Writes the serving container's route again when the edge proxy lost it (a restarted or
/// recreated proxy starts without routes).
async fn restore_route(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    target: &Target,
    plan: &plan::Plan,
) -> ProxyRouteStatus {
    let route_id = plan::route_id(namespace, &resource.name_any());
    let wanted = plan
        .route
        .as_ref()
        .zip(plan.internal_port)
        .map(|(r, port)| (r, plan.upstream.as_str(), port));
    match target.ensure_route(&route_id, wanted).await {
        Ok(false) => ProxyRouteStatus::Ready,
        Ok(true) => {
            let note = format!(
                "the edge proxy had lost the route to {}; wrote it again",
                plan.container_name
            );
            context
                .publish_event(
                    &resource.object_ref(&()),
                    EventType::Normal,
                    "RouteRestored",
                    note,
                )
                .await;
            ProxyRouteStatus::Ready
        }
        Err(error) => {
            tracing::warn!(%error, resource = %resource.name_any(), "could not check the route");
            ProxyRouteStatus::Unknown
        }
    }
}

/// The status the resource should have now.
/// What the reconciler observed of the resource's runtime: its route, its container.
pub struct Observed {
    pub route_status: ProxyRouteStatus,
    pub runtime: runtime_state::Seen,
    /// The runtime is stopped on request (`status.runtimeControl.appliedState`).
    pub stopped: bool,
}

pub fn desired_status(
    resource: &Resource,
    server: Option<&Server>,
    deployments: &[Deployment],
    observed: Observed,
    now: Timestamp,
) -> ResourceStatus {
    let current = resource.status.clone().unwrap_or_default();
    let route_status = observed.route_status;
    let last = deployments.last();
    let mut proxy_kind = server.map_or(ProxyKind::Caddy, |s| s.spec.proxy.kind);
    // Static sites without a network profile listen on Berth's default port.
    let target_port = plan::internal_port(resource)
        .ok()
        .flatten()
        .map_or(0, i64::from);
    let mut route = server.and_then(|s| plan::route(resource, s));
    let mut provider_key = Some("caddy".to_string());
    // `direct-port`: the container answers on the server's own port, no proxy in between.
    if let Some(direct) = server.and_then(|s| plan::direct_route(resource, s)) {
        route = Some(direct);
        proxy_kind = ProxyKind::None;
        provider_key = None;
    }
    let planned = route.as_ref().map(|r| PlannedAccessRoute {
        url: r.url.clone(),
        hostname: r.hostname.clone(),
        scheme: ROUTE_SCHEME,
        provider_key: provider_key.clone(),
        path_prefix: r.path_prefix.clone(),
        proxy_kind,
        target_port,
    });
    let serving = serving(deployments);
    let latest = route
        .as_ref()
        .zip(serving)
        .map(|(r, d)| AppliedAccessRoute {
            url: r.url.clone(),
            hostname: r.hostname.clone(),
            scheme: ROUTE_SCHEME,
            provider_key: provider_key.clone(),
            deployment_id: d.name_any(),
            deployment_status: DeploymentState::Succeeded,
            path_prefix: r.path_prefix.clone(),
            proxy_kind,
            target_port: Some(target_port),
            updated_at: wire_time(
                &d.status
                    .as_ref()
                    .and_then(|s| s.finished_at.clone())
                    .unwrap_or(Time(Timestamp::UNIX_EPOCH)),
            ),
        });
    let generation = resource.metadata.generation;
    let mut status = ResourceStatus {
        deployment_count: i64::try_from(deployments.len()).unwrap_or(i64::MAX),
        last_deployment_id: last.map(|d| d.name_any()),
        last_deployment_status: last.map(|d| state(d).unwrap_or(DeploymentState::Created)),
        access_summary: Some(AccessSummary {
            planned_generated_access_route: planned,
            latest_generated_access_route: latest,
            proxy_route_status: Some(route_status),
            ..current.access_summary.clone().unwrap_or_default()
        }),
        proxy_route_status: Some(route_status),
        last_route_realization_deployment_id: serving.map(|d| d.name_any()),
        observed_generation: generation,
        runtime: Some(runtime_state::observation(
            &observed.runtime,
            current.runtime.as_ref(),
            now,
        )),
        runtime_control: current.runtime_control,
        conditions: current.conditions,
    };
    // Stopped on request is the desired state reached (as a Deployment scaled to zero is
    // available), so GitOps health checks do not report a deliberate stop as a failure.
    // A field Berth would not honour is said first: what runs is not what was declared.
    let refused = resource.spec.check_support().err();
    let (ready, reason, message) = match (serving, route_status) {
        _ if refused.is_some() => (
            ConditionStatus::False,
            berth_crds::condition::reason::INVALID_SPEC,
            format!(
                "spec.{}; nothing is deployed until it is fixed",
                refused.map(|e| e.message).unwrap_or_default()
            ),
        ),
        (Some(_), _) if observed.stopped => (
            ConditionStatus::True,
            reason::STOPPED,
            "stopped on request (spec.runtime.desiredState: stopped); nothing serves".to_string(),
        ),
        (Some(d), ProxyRouteStatus::Ready) => (
            ConditionStatus::True,
            reason::SERVING,
            format!("deployment {} serves the resource", d.name_any()),
        ),
        (Some(_), _) => (
            ConditionStatus::False,
            reason::ROUTE_NOT_READY,
            "the serving container is not running".to_string(),
        ),
        (None, _) => (
            ConditionStatus::False,
            reason::NOT_DEPLOYED,
            "no deployment has succeeded yet".to_string(),
        ),
    };
    condition::merge(
        &mut status.conditions,
        Condition::new(READY, ready, reason, message, generation, now),
    );
    status
}

/// Removes the resource's containers and route, then its deployments. An unreachable server
/// does not block deletion forever: an event says what was left behind.
async fn cleanup(resource: &Resource, context: &Context, namespace: &str) -> Result<Action> {
    let name = resource.name_any();
    let reference = resource.object_ref(&());
    let deployments = deployments_of(context, namespace, &name);
    // A resource that never had an attempt has nothing on the server: no SSH round trip (and
    // no timeout on a server that is going away) stands between it and its deletion.
    let ever_deployed = !deployments.is_empty()
        || resource
            .status
            .as_ref()
            .is_some_and(|s| s.last_deployment_id.is_some());
    if let Some(server_id) = resource.spec.server_id.as_ref().filter(|_| ever_deployed) {
        match connect(context, namespace, server_id).await {
            Ok((server, target)) => {
                // A proxy that cannot drop the route must not keep the resource forever: the
                // route then points at a removed container and answers 502, which an event names.
                if server.spec.proxy.kind == ProxyKind::Caddy {
                    let route = plan::route_id(namespace, &name);
                    if let Err(error) = target.switch_route(&route, None).await {
                        let note = format!("could not remove route {route}: {error}");
                        context
                            .publish_event(&reference, EventType::Warning, "RouteNotRemoved", note)
                            .await;
                    }
                }
                for (container, _) in target.resource_containers(namespace, &name).await? {
                    target.remove_container(&container).await?;
                }
                compose::run::remove_stack(&target, namespace, &name).await?;
                package::remove_built_images(&target, namespace, &name).await;
                // The server's observer forgets the route it confirmed for the resource.
                let id = ServerId {
                    namespace: namespace.to_string(),
                    name: server_id.clone(),
                };
                if let Some(observed) = context.observers.get(&id) {
                    observed.forget_route(namespace, &name);
                }
            }
            Err(error) => {
                let note = format!(
                    "server not reachable during deletion ({error}); containers may be left"
                );
                context
                    .publish_event(&reference, EventType::Warning, "CleanupIncomplete", note)
                    .await;
            }
        }
    }
    let api = Api::<Deployment>::namespaced(context.client.clone(), namespace);
    for deployment in deployments {
        match api
            .delete(&deployment.name_any(), &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    forget_history(context, namespace, &name).await;
    Ok(Action::await_change())
}

/// Drops the deleted resource's history from the observation store, so one created again
/// under its name neither counts nor shows the old attempts. A store that fails leaves it to
/// the retention pruning, with a warning: deletion does not wait on the store.
async fn forget_history(context: &Context, namespace: &str, name: &str) {
    let Some(store) = context.timeline.store() else {
        return;
    };
    let (namespace, name) = (namespace.to_string(), name.to_string());
    let forgot = tokio::task::spawn_blocking(move || store.forget_resource(&namespace, &name));
    match forgot.await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "could not forget a deleted resource's history"),
        Err(error) => tracing::warn!(%error, "forgetting a deleted resource's history stopped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::deployment::DeploymentStatus;
    use berth_crds::resource::ResourceSpec;
    use berth_crds::server::ServerSpec;
    use serde_json::json;

    fn resource(generation: i64, auto_deploy: bool) -> Resource {
        let spec: ResourceSpec = serde_json::from_value(json!({
            "projectId": "prj-1", "environmentId": "env-1", "serverId": "local",
            "name": "web", "kind": "application",
            "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
            "networkProfile": { "internalPort": 8080 },
            "autoDeploy": { "enabled": auto_deploy },
        }))
        .unwrap();
        let mut resource = Resource::new("web", spec);
        resource.metadata.namespace = Some("org-acme".into());
        resource.metadata.generation = Some(generation);
        resource
    }

    fn ended(resource: &Resource, state: DeploymentState) -> Deployment {
        let mut deployment = new_deployment(resource, true);
        deployment.status = Some(DeploymentStatus {
            status: Some(state),
            ..Default::default()
        });
        deployment
    }

    #[test]
    fn first_generation_deploys_later_ones_only_with_auto_deploy() {
        let first = resource(1, false);
        assert!(needs_deployment(&first, &[]));
        let done = [ended(&first, DeploymentState::Succeeded)];
        assert!(!needs_deployment(&first, &done));
        assert!(!needs_deployment(&resource(2, false), &done));
        assert!(needs_deployment(&resource(2, true), &done));
        // Enabled for another image repository: blocked until enabled again.
        let mut moved = resource(2, true);
        let mut elsewhere = moved.spec.source.clone().unwrap();
        elsewhere.locator = "berth/other-app:1".into();
        moved.spec.auto_deploy.source_binding_fingerprint =
            Some(berth_crds::resource::source_binding_fingerprint(&elsewhere));
        assert!(!needs_deployment(&moved, &done));
        assert_eq!(
            new_deployment(&resource(2, true), false).name_any(),
            "dep-web-2"
        );
    }

    #[test]
    fn local_folders_deploy_by_themselves_other_kinds_do_not() {
        let mut folder = resource(1, false);
        folder.spec.source = Some(
            serde_json::from_value(json!({
                "kind": "local-folder", "locator": "/srv/site",
            }))
            .unwrap(),
        );
        assert!(needs_deployment(&folder, &[]));
        let mut git = resource(1, false);
        git.spec.source = Some(
            serde_json::from_value(json!({
                "kind": "git", "locator": "https://example.com/a.git",
            }))
            .unwrap(),
        );
        assert!(!needs_deployment(&git, &[]));
    }

    #[test]
    fn status_counts_deployments_and_reports_the_serving_route() {
        let resource = resource(2, true);
        let server = Server::new(
            "local",
            serde_json::from_value::<ServerSpec>(json!({
                "host": "127.0.0.1", "username": "root", "credentialId": "key",
                "proxy": { "kind": "caddy", "httpPort": 8080, "httpsPort": 8443 },
            }))
            .unwrap(),
        );
        let mut failed = ended(&resource, DeploymentState::Failed);
        failed.metadata.name = Some("dep-web-2".into());
        let mut succeeded = ended(&resource, DeploymentState::Succeeded);
        succeeded.metadata.name = Some("dep-web-1".into());
        let deployments = [succeeded, failed];
        let status = desired_status(
            &resource,
            Some(&server),
            &deployments,
            Observed {
                route_status: ProxyRouteStatus::Ready,
                runtime: runtime_state::Seen::NotDeployed,
                stopped: false,
            },
            Timestamp::now(),
        );
        assert_eq!(status.deployment_count, 2);
        assert_eq!(status.last_deployment_id.as_deref(), Some("dep-web-2"));
        assert_eq!(status.last_deployment_status, Some(DeploymentState::Failed));
        let summary = status.access_summary.unwrap();
        assert_eq!(
            summary.planned_generated_access_route.unwrap().url,
            "http://web.localhost:8080/"
        );
        let latest = summary.latest_generated_access_route.unwrap();
        assert_eq!(latest.deployment_id, "dep-web-1");
    }
}
