//! Cleanup on deletion: the resource's containers, route and built images leave its server,
//! then its deployments and its history in the observation store.

use berth_crds::deployment::Deployment;
use berth_crds::resource::Resource;
use berth_crds::server::ProxyKind;
use berth_remote::ServerId;
use kube::api::DeleteParams;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Api, Resource as _, ResourceExt};

use super::attempts::deployments_of;
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::deployment::{compose, connect, package};
use crate::reconcilers::event_reason;

/// How long deletion waits for the resource's running attempts to stop.
const STOP_ATTEMPTS_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

/// Removes the resource's containers and route, then its deployments. An unreachable server
/// does not block deletion forever: an event says what was left behind.
pub(super) async fn cleanup(
    resource: &Resource,
    context: &Context,
    namespace: &str,
) -> Result<Action> {
    let name = resource.name_any();
    let deployments = deployments_of(context, namespace, &name);
    // A resource that never had an attempt has nothing on the server: no SSH round trip (and
    // no timeout on a server that is going away) stands between it and its deletion.
    let ever_deployed = !deployments.is_empty()
        || resource
            .status
            .as_ref()
            .is_some_and(|s| s.last_deployment_id.is_some());
    // A running attempt stops first, so that nothing it starts outlives the cleanup.
    context
        .attempts
        .stop_resource(namespace, &name, STOP_ATTEMPTS_WITHIN)
        .await;
    if let Some(server_id) = resource.spec.server_id.as_ref().filter(|_| ever_deployed) {
        clear_server(resource, context, namespace, server_id).await?;
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

/// Takes the resource off its server, or says in an event that the server could not be
/// reached and containers may be left.
async fn clear_server(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    server_id: &str,
) -> Result<()> {
    let name = resource.name_any();
    match connect(context, namespace, server_id).await {
        Ok((server, target)) => {
            // A proxy that cannot drop the route must not keep the resource forever: the
            // route then points at a removed container and answers 502, which an event names.
            if server.spec.proxy.kind == ProxyKind::Caddy {
                drop_route(resource, context, namespace, &target).await;
            }
            for (container, _) in target.resource_containers(namespace, &name).await? {
                target.remove_container(&container).await?;
            }
            for container in target.task_run_containers(namespace, &name).await? {
                target.remove_container(&container).await?;
            }
            compose::run::remove_stack(&target, namespace, &name).await?;
            package::remove_built_images(&target, namespace, &name).await;
            // The server's observer forgets the route it confirmed for the resource.
            let id = ServerId {
                namespace: namespace.to_string(),
                name: server_id.to_string(),
            };
            if let Some(observed) = context.observers.get(&id) {
                observed.forget_route(namespace, &name);
            }
        }
        Err(error) => {
            let note =
                format!("server not reachable during deletion ({error}); containers may be left");
            context
                .publish_event(
                    &resource.object_ref(&()),
                    EventType::Warning,
                    event_reason::CLEANUP_INCOMPLETE,
                    note,
                )
                .await;
        }
    }
    Ok(())
}

/// Removes the resource's route from the edge proxy; a failure is an event, not an error.
async fn drop_route(resource: &Resource, context: &Context, namespace: &str, target: &Target) {
    let route = crate::reconcilers::deployment::plan::route_id(namespace, &resource.name_any());
    if let Err(error) = target.switch_route(&route, None).await {
        let note = format!("could not remove route {route}: {error}");
        context
            .publish_event(
                &resource.object_ref(&()),
                EventType::Warning,
                event_reason::ROUTE_NOT_REMOVED,
                note,
            )
            .await;
    }
}

/// Drops the deleted resource's history from the observation store, so one created again
/// under its name neither counts nor shows the old attempts. A store that fails leaves it to
/// the retention pruning, with a warning: deletion does not wait on the store.
async fn forget_history(context: &Context, namespace: &str, name: &str) {
    let Some(store) = context.observations.store() else {
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
