//! Runtime control as the Resource reconciler sees it: the serving container's state for
//! `status.runtime`, and a runtime stopped on request kept stopped (`runtime_control` carries
//! out the stop, start or restart itself).

use berth_crds::deployment::Deployment;
use berth_crds::resource::Resource;
use kube::Resource as _;
use kube::runtime::events::EventType;

use super::attempts::serving;
use super::{runtime_control, runtime_state};
use crate::context::Context;
use crate::reconcilers::deployment::connect;
use crate::reconcilers::event_reason;

/// What the server's observer knows of the serving container; a container not running while
/// the runtime is `stopped` on request is stopped as asked.
pub(super) fn seen(
    context: &Context,
    namespace: &str,
    name: &str,
    deployments: &[Deployment],
    stopped: bool,
) -> runtime_state::Seen {
    let seen = runtime_state::observe(context, namespace, name, serving(deployments));
    if stopped {
        runtime_state::stopped_on_request(seen)
    } else {
        seen
    }
}

/// Stops the serving container again when it runs although the runtime is to stay stopped
/// (started by hand, or by Docker's restart policy): drift repair the other way round.
pub(super) async fn keep_stopped(
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
            event_reason::DRIFT_REPAIRED,
            note,
        )
        .await;
}
