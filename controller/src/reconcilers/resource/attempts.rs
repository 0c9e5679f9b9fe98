//! The resource's attempts: which Deployments it has, which one serves, and the new attempt its
//! current spec (or, through `config_redeploy`, its changed configuration) calls for.

use std::collections::BTreeSet;

use berth_crds::GENERATION_ANNOTATION;
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::Resource;
use kube::api::PostParams;
use kube::{Api, ResourceExt};

use super::config_redeploy::config_changed;
use crate::context::Context;
use crate::error::Result;

/// The resource's deployments from the cache, oldest first.
pub(super) fn deployments_of(
    context: &Context,
    namespace: &str,
    resource: &str,
) -> Vec<Deployment> {
    context
        .caches
        .deployments_of(namespace, resource)
        .into_iter()
        .map(|d| d.as_ref().clone())
        .collect()
}

/// Whether the resource's current spec needs a new attempt: it names a server and a source of a
/// kind Berth deploys (an image, or a local folder to build), no attempt was started for this
/// generation yet, and either it never deployed (and its first deployment is not left to a
/// request) or auto-deploy is on and not blocked by a changed source binding.
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
    let due = if deployments.is_empty() {
        resource.spec.first_deployment.is_on_create()
    } else {
        auto
    };
    deployable && !covered && due
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

/// The attempt a changed configuration gets. `attempts` (every attempt the resource ever had)
/// keeps its name unique even after old attempts were removed.
fn config_redeployment(resource: &Resource, attempts: usize) -> Deployment {
    let mut deployment = new_deployment(resource, false);
    let name = format!("{}-c{attempts}", deployment.name_any());
    deployment.metadata.name = Some(name);
    deployment.spec.trigger = Some("config-change".into());
    deployment
}

/// Starts the attempt the spec or a changed configuration calls for, if any. Returns the
/// resource's deployments (the new one last) and every attempt it ever had.
pub(super) async fn start_due(
    resource: &Resource,
    context: &Context,
    namespace: &str,
) -> Result<(Vec<Deployment>, BTreeSet<String>)> {
    let name = resource.name_any();
    let mut deployments = deployments_of(context, namespace, &name);
    // A spec's attempt is named by its generation: it is created while the store is read.
    let (recorded, created) = if needs_deployment(resource, &deployments) {
        let wanted = new_deployment(resource, deployments.is_empty());
        tokio::join!(
            attempts_ever(context, namespace, &name, &deployments),
            create(context, namespace, wanted)
        )
    } else {
        let recorded = attempts_ever(context, namespace, &name, &deployments).await;
        let created = if config_changed(resource, context, namespace, &deployments) {
            let deployment = config_redeployment(resource, recorded.len());
            create(context, namespace, deployment).await
        } else {
            Ok(None)
        };
        (recorded, created)
    };
    let mut attempts = recorded;
    if let Some(created) = created? {
        attempts.insert(created.name_any());
        deployments.push(created);
    }
    Ok((deployments, attempts))
}

/// Creates `deployment`; `None` when it exists already (the cache had not seen our own
/// earlier create yet).
async fn create(
    context: &Context,
    namespace: &str,
    deployment: Deployment,
) -> Result<Option<Deployment>> {
    let api = Api::<Deployment>::namespaced(context.client.clone(), namespace);
    match api.create(&PostParams::default(), &deployment).await {
        Ok(created) => {
            if let Some(uid) = created.uid() {
                context.attempts.created_here(&uid);
            }
            Ok(Some(created))
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
        Err(error) => Err(error.into()),
    }
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
    match context.observations.attempts(namespace, resource).await {
        Ok(recorded) => attempts.extend(recorded),
        Err(error) => tracing::warn!(%error, resource, "could not count past attempts"),
    }
    attempts
}

/// The attempt now serving: the newest succeeded one, unless a newer attempt is still running.
pub fn serving(deployments: &[Deployment]) -> Option<&Deployment> {
    deployments
        .iter()
        .rev()
        .find(|d| state(d) == Some(DeploymentState::Succeeded))
}

pub(super) fn state(deployment: &Deployment) -> Option<DeploymentState> {
    deployment.status.as_ref().and_then(|s| s.status)
}
