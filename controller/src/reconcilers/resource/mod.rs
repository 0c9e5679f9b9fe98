//! Resource: starts a Deployment when its spec calls for one, reports deployments and the access
//! summary, restores a managed container removed or stopped by hand, and removes containers and
//! route when the Resource is deleted.
//!
//! One reconcile is a pipeline: start the attempt the spec or a changed configuration calls for
//! (`attempts`, `config_redeploy`), prune the history (`history`), carry out a stop, start or
//! restart (`runtime`), check and mend the serving container and its route (`drift`, `route`),
//! then decide the status (`decide`, `access`, `deployed`, pure) and write it. `cleanup` runs on
//! deletion.
//!
//! Helpers only this reconciler uses live here too: which configuration changes wake a Resource
//! (`config_triggers`), stopping and starting on request (`runtime_control`), reading the
//! container's state (`runtime_state`), keeping a crash's evidence (`crash_evidence`), bringing
//! a stack's other services back (`stack_repair`) and the routes of its domains
//! (`domain_routes`).

mod access;
mod attempts;
mod cleanup;
mod config_redeploy;
mod config_triggers;
mod crash_evidence;
mod decide;
mod deployed;
mod domain_routes;
mod drift;
mod history;
mod route;
mod runtime;
mod runtime_control;
mod runtime_state;
mod stack_repair;

use std::sync::Arc;

use berth_crds::deployment::Deployment;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::{Resource, ResourceStatus};
use berth_crds::runtime_control::DesiredRuntimeState;
use futures::channel::mpsc::UnboundedReceiver;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};

pub use self::attempts::{needs_deployment, new_deployment, serving};
pub use self::decide::{Observed, decide};
pub use self::history::expired_attempts;

use self::attempts::state;
use self::config_triggers as triggers;
use super::fresh::with_finalizer;
use crate::cache::Subscription;
use crate::cache::{Caches, changed_by, digest};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::policy::{RESYNC_AFTER, drain, error_policy};
use crate::status::StatusWriter;

const KIND: &str = "Resource";
/// Removes the resource's containers and route before it goes away.
pub const FINALIZER: &str = "berth.dev/resource-cleanup";

/// What the Resource controller reacts to, besides the server observers' wake-ups.
pub struct Inputs {
    pub resources: Subscription<Resource>,
    pub deployments: Subscription<Deployment>,
    pub secrets: Subscription<Secret>,
    pub environments: Subscription<Environment>,
    pub projects: Subscription<Project>,
    pub organizations: Subscription<Organization>,
    pub domain_bindings: Subscription<DomainBinding>,
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
    let Some(resource) = with_finalizer(&api, resource, FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    finalizer(&api, FINALIZER, resource, |event| async {
        match event {
            FinalizerEvent::Apply(resource) => apply(&resource, &context, &namespace).await,
            FinalizerEvent::Cleanup(resource) => {
                cleanup::cleanup(&resource, &context, &namespace).await
            }
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// One reconcile of a live resource: act on its attempts and runtime, observe what serves,
/// decide the status, write it.
async fn apply(resource: &Resource, context: &Context, namespace: &str) -> Result<Action> {
    let name = resource.name_any();
    let (deployments, attempts) = attempts::start_due(resource, context, namespace).await?;
    history::prune(resource, context, namespace, &deployments, &attempts).await?;
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
    let seen = runtime::seen(context, namespace, &name, &deployments, stopped);
    let route_status =
        drift::check_serving(resource, context, namespace, &deployments, stopped).await;
    let observed = Observed {
        route_status,
        runtime: seen,
        stopped,
        attempts: attempts.len(),
        runtime_control: control.control,
        bindings: access::bindings_of(context, namespace, &name),
        config_fingerprint: serving(&deployments)
            .and_then(|_| config_redeploy::current_fingerprint(resource, context, namespace)),
    };
    let status = decide(
        resource,
        server.as_deref(),
        &deployments,
        observed,
        Timestamp::now(),
    );
    let written = control.written.as_ref();
    write(resource, context, namespace, written, &status).await?;
    Ok(Action::requeue(if control.retry_soon {
        runtime_control::RETRY_AFTER
    } else {
        RESYNC_AFTER
    }))
}

/// Writes the decided status over `written` (what runtime control wrote this reconcile, if
/// anything).
async fn write(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    written: Option<&ResourceStatus>,
    status: &ResourceStatus,
) -> Result<()> {
    let api = Api::<Resource>::namespaced(context.client.clone(), namespace);
    StatusWriter::new(&api, resource)
        .apply(written, status)
        .await?;
    Ok(())
}

// Declared last: hack/lib/largest_functions.py skips everything after `#[cfg(test)]`.
#[cfg(test)]
mod deployed_tests;
#[cfg(test)]
mod reconcile_tests;
#[cfg(test)]
mod tests;
