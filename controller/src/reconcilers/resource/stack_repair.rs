//! Drift repair of a Compose stack's other services (the routed one is repaired as any
//! resource's container): a service container that stopped is started again, one removed by
//! hand is recreated from the serving attempt's Compose file, read again from the commit the
//! controller keeps (or the folder). Costs nothing while the server's index shows every
//! recorded service running.

use berth_crds::deployment::Deployment;
use berth_crds::resource::Resource;
use kube::runtime::events::EventType;
use kube::{Resource as _, ResourceExt};

use crate::context::Context;
use crate::observer::ObservedServer;
use crate::reconcilers::deployment::compose::{self, stack::Stack};
use crate::reconcilers::deployment::container_settings::ContainerSettings;
use crate::reconcilers::deployment::plan::{self, Origin, Packaging, Plan, Recipe};
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::event_reason;

/// What drift of the stack's services the index shows: (stopped containers, missing ones).
fn drift(
    observed: &ObservedServer,
    namespace: &str,
    resource: &str,
    current: &Deployment,
) -> (Vec<String>, bool) {
    let Some(stack) = current.status.as_ref().and_then(|s| s.stack.as_ref()) else {
        return (Vec::new(), false);
    };
    let present = observed.containers_of(namespace, resource);
    let mut stopped = Vec::new();
    let mut missing = false;
    for service in stack
        .services
        .iter()
        .filter(|s| s.name != stack.routed_service)
    {
        match present.iter().find(|c| c.name == service.container) {
            Some(container) if !container.running => stopped.push(service.container.clone()),
            Some(_) => {}
            None => missing = true,
        }
    }
    (stopped, missing)
}

/// Whether the index shows a service of the serving attempt's stack stopped or gone.
pub fn needs_repair(observed: &ObservedServer, resource: &Resource, current: &Deployment) -> bool {
    let namespace = resource.namespace().unwrap_or_default();
    let (stopped, missing) = drift(observed, &namespace, &resource.name_any(), current);
    !stopped.is_empty() || missing
}

/// Repairs the serving attempt `current`'s stack services on `target` when the index shows one
/// stopped or gone; `plan` is the serving attempt's plan with its configuration applied.
pub async fn repair(
    resource: &Resource,
    context: &Context,
    observed: &ObservedServer,
    target: &Target,
    current: &Deployment,
    plan: &Plan,
) {
    let namespace = resource.namespace().unwrap_or_default();
    let (stopped, missing) = drift(observed, &namespace, &resource.name_any(), current);
    for container in &stopped {
        // The index may lag behind a container that runs again already.
        if target.running(container).await.ok().flatten() == Some(true) {
            continue;
        }
        let note = match target.start(container).await {
            Ok(()) => format!("stack service container {container} was stopped; started it"),
            Err(error) => format!("could not start stack service container {container}: {error}"),
        };
        event(resource, context, event_reason::DRIFT_REPAIRED, note).await;
    }
    if !missing {
        return;
    }
    let note = match reload(context, current, plan).await {
        Some(stack) => match compose::run::bring_up(target, &stack).await {
            Ok(done) => format!(
                "stack services were gone; brought them back ({})",
                done.join("; ")
            ),
            Err(error) => format!("could not bring the stack's services back: {error}"),
        },
        None => "a stack service container is gone and its Compose file cannot be read again; \
                 redeploy to bring it back"
            .to_string(),
    };
    event(resource, context, event_reason::DRIFT_REPAIRED, note).await;
}

/// The routed service's Compose settings of the serving attempt, for recreating its
/// container; `None` when the stack cannot be read again.
pub async fn routed_settings(
    context: &Context,
    current: &Deployment,
    plan: &Plan,
) -> Option<Box<ContainerSettings>> {
    let stack = reload(context, current, plan).await?;
    Some(Box::new(stack.routed().settings.clone()))
}

/// The serving attempt's stack, planned again from its Compose file: the commit the
/// controller's copy of the repository holds, or the folder.
async fn reload(context: &Context, current: &Deployment, plan: &Plan) -> Option<Stack> {
    let Packaging::Build(build) = &plan.packaging else {
        return None;
    };
    let Recipe::Compose { file, target } = &build.recipe else {
        return None;
    };
    let base = build.base_directory.to_str().filter(|b| !b.is_empty());
    let (root, _exported) = match &build.origin {
        Origin::Folder(folder) => (folder.join(&build.base_directory), None),
        Origin::Git(git) => {
            let sha = current.status.as_ref()?.source_commit.as_ref()?.sha.clone();
            let exported = context
                .sources
                .export(&git.repository, &sha, base)
                .await
                .ok()?;
            (exported.path().to_path_buf(), Some(exported))
        }
    };
    let (file, target, plan) = (file.clone(), target.clone(), plan.clone());
    let loaded = tokio::task::spawn_blocking(move || {
        compose::load(&root, file.as_deref(), target.as_deref(), &plan)
    })
    .await;
    loaded.ok()?.ok()
}

async fn event(resource: &Resource, context: &Context, reason: &str, note: String) {
    context
        .publish_event(&resource.object_ref(&()), EventType::Normal, reason, note)
        .await;
}

/// Whether `resource` runs a Compose stack.
pub fn is_stack(resource: &Resource) -> bool {
    resource.spec.kind == berth_crds::resource::ResourceKind::ComposeStack
}

/// The serving attempt's plan, for a repair.
pub fn plan_of(
    resource: &Resource,
    server: &berth_crds::server::Server,
    current: &Deployment,
    volumes: &plan::AttachedVolumes,
) -> Option<Plan> {
    plan::plan(
        resource,
        server,
        &current.name_any(),
        current.spec.source_snapshot.as_ref(),
        volumes,
    )
    .ok()
}
