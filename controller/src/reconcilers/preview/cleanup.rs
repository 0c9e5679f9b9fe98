//! Removing a preview: its domain binding first (whose own cleanup takes its route off the edge
//! proxy; its Certificate goes with it), then its resource (the resource's own cleanup takes its
//! containers, route, built images and attempts off the server) and its databases, then
//! whatever on the server still carries the preview's label, then its environment and copied
//! Secrets.
//! Only when the resource is gone does the preview let go, so nothing it made outlives it.

use std::time::Duration;

use berth_crds::NAMESPACE_LABEL;
use berth_crds::backup::DependencyResourceRestore;
use berth_crds::config::environment_secret_name;
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::preview::PREVIEW_LABEL;
use berth_crds::preview::PreviewEnvironment;
use berth_crds::preview::preview_network;
use berth_crds::resource::Resource;
use berth_remote::labelled;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ListParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource as _, ResourceExt};
use serde::de::DeserializeOwned;

use super::plan::{domain_binding_name, environment_name, made_name};
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::deployment::connect;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::event_reason;

/// How soon a cleanup waiting for the binding's or the resource's own cleanup looks again.
const RESOURCE_GONE_RECHECK: Duration = Duration::from_secs(2);

/// `None` once everything the preview made is gone; else when to look again.
pub async fn remove_made(
    preview: &PreviewEnvironment,
    context: &Context,
    namespace: &str,
) -> Result<Option<Action>> {
    let bindings = Api::<DomainBinding>::namespaced(context.client.clone(), namespace);
    if delete(&bindings, &domain_binding_name(preview)).await? {
        return Ok(Some(Action::requeue(RESOURCE_GONE_RECHECK)));
    }
    let name = made_name(preview);
    let resources = Api::<Resource>::namespaced(context.client.clone(), namespace);
    if delete(&resources, &name).await? {
        return Ok(Some(Action::requeue(RESOURCE_GONE_RECHECK)));
    }
    if remove_databases(preview, context, namespace).await? {
        return Ok(Some(Action::requeue(RESOURCE_GONE_RECHECK)));
    }
    sweep_server(preview, context, namespace).await;
    let environments = Api::<Environment>::namespaced(context.client.clone(), namespace);
    delete(&environments, &environment_name(preview)).await?;
    delete_secret_copies(preview, context, namespace).await?;
    tracing::info!(preview = %preview.metadata.name.as_deref().unwrap_or_default(), "preview removed");
    Ok(None)
}

/// Deletes the preview's own databases and their fillings (each database's own cleanup takes
/// its container, network and volume off the server); whether any still exists.
async fn remove_databases(
    preview: &PreviewEnvironment,
    context: &Context,
    namespace: &str,
) -> Result<bool> {
    let made = ListParams::default().labels(&format!("{PREVIEW_LABEL}={}", made_name(preview)));
    let restores = Api::<DependencyResourceRestore>::namespaced(context.client.clone(), namespace);
    let dependencies = Api::<DependencyResource>::namespaced(context.client.clone(), namespace);
    let mut left = false;
    for restore in restores.list_metadata(&made).await? {
        left |= delete(&restores, &restore.name_any()).await?;
    }
    for dependency in dependencies.list_metadata(&made).await? {
        left |= delete(&dependencies, &dependency.name_any()).await?;
    }
    Ok(left)
}

/// How often the sweep goes over the server when something would not go (a container Docker is
/// still removing holds its network and volumes), and how long it waits in between.
const SWEEP_ROUNDS: usize = 3;
const SWEEP_PAUSE: Duration = Duration::from_secs(1);

/// Takes off the preview's server what its owners' cleanups leave there: its own network (every
/// container still on it, edge proxies included, taken off first), its Compose volumes (a
/// resource keeps them, a preview does not) and anything else labelled as the preview's. What
/// would not go does not stop the rest, and is tried again a few times. A server that cannot be
/// reached, or a thing that still would not go, does not hold the cleanup: an Event says what
/// was left there (and the shim's leftovers check lists it).
async fn sweep_server(preview: &PreviewEnvironment, context: &Context, namespace: &str) {
    // The server it ran on; before its status said so, the previewed resource's.
    let base = crate::cache::Caches::get(
        &context.caches.resources,
        namespace,
        &preview.spec.resource_id,
    );
    let server = preview.status.as_ref().and_then(|s| s.server_id.clone());
    let Some(server) = server.or_else(|| base?.spec.server_id.clone()) else {
        return;
    };
    let name = made_name(preview);
    let left = match connect(context, namespace, &server).await {
        Ok((_, target)) => sweep_rounds(&target, namespace, &name).await,
        Err(error) => vec![error.to_string()],
    };
    if left.is_empty() {
        return;
    }
    let note = format!(
        "preview {name} left things on server {server}: {}",
        left.join("; ")
    );
    let reference = preview.object_ref(&());
    let reason = event_reason::PREVIEW_LEFTOVER;
    context
        .publish_event(&reference, EventType::Warning, reason, note)
        .await;
}

/// Sweeps until nothing of preview `name` is left or [`SWEEP_ROUNDS`] went by; what the last
/// round could not remove.
async fn sweep_rounds(target: &Target, namespace: &str, name: &str) -> Vec<String> {
    let mut left = Vec::new();
    for round in 1..=SWEEP_ROUNDS {
        left = sweep_once(target, namespace, name).await;
        if left.is_empty() || round == SWEEP_ROUNDS {
            break;
        }
        tokio::time::sleep(SWEEP_PAUSE).await;
    }
    left
}

/// One pass over the server: everything labelled as the preview's (containers first: they
/// hold the networks and volumes), then its network made before networks carried the label.
async fn sweep_once(target: &Target, namespace: &str, name: &str) -> Vec<String> {
    let (connection, docker) = (&target.connection, &target.docker);
    let owned = [
        format!("{PREVIEW_LABEL}={name}"),
        format!("{NAMESPACE_LABEL}={namespace}"),
    ];
    let listed = match labelled::list(connection, docker, &owned).await {
        Ok(listed) => listed,
        Err(error) => return vec![error.to_string()],
    };
    let mut left = Vec::new();
    for item in &listed {
        if let Err(error) = labelled::remove(connection, docker, item).await {
            left.push(format!("{} {}: {error}", item.kind.as_str(), item.name));
        }
    }
    let network = preview_network(namespace, name);
    if let Err(error) = target.remove_serving_network(&network).await {
        left.push(format!("network {network}: {error}"));
    }
    left
}

/// Deletes the Secrets a preview copied (none copied: nothing happens).
pub async fn delete_secret_copies(
    preview: &PreviewEnvironment,
    context: &Context,
    namespace: &str,
) -> Result<()> {
    let secrets = Api::<Secret>::namespaced(context.client.clone(), namespace);
    let name = made_name(preview);
    for copy in [
        format!("{name}-secrets"),
        environment_secret_name(&environment_name(preview)),
    ] {
        if crate::cache::Caches::get(&context.caches.secrets, namespace, &copy).is_some() {
            delete(&secrets, &copy).await?;
        }
    }
    Ok(())
}

/// Asks for `name`'s deletion; whether it still exists (its finalizers still run).
pub async fn delete<K>(api: &Api<K>, name: &str) -> Result<bool>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(error) => Err(error.into()),
        Ok(either) => Ok(either.is_left()),
    }
}
