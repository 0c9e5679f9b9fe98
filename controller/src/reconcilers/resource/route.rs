//! Route restore: the serving container's route written again on an edge proxy that lost it.

use berth_crds::resource::{ProxyRouteStatus, Resource};
use kube::runtime::events::EventType;
use kube::{Resource as _, ResourceExt};

use crate::context::Context;
use crate::reconcilers::deployment::plan;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::event_reason;

/// Writes the serving container's route again when the edge proxy lost it (a restarted or
/// recreated proxy starts without routes).
pub(super) async fn restore_route(
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
                    event_reason::ROUTE_RESTORED,
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
