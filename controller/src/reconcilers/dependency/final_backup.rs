//! A managed dependency being deleted waits for its final backup (see
//! `reconcilers::backup::final_backup`), which its `DeletionBlocked` condition shows.

use berth_crds::backup_policy::DependencyResourceBackupPolicy;
use berth_crds::condition::{self, DELETION_BLOCKED};
use berth_crds::dependency_resource::DependencyResource;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::runtime::controller::Action;

use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::backup::final_backup::{self, REASON};
use crate::status::StatusWriter;

/// Takes or waits for the final backup of a dependency being deleted: `None` when it may be
/// removed now, else when to look again. Waiting and a failed backup show on its
/// `DeletionBlocked` condition.
pub async fn before_removal(
    dependency: &DependencyResource,
    context: &Context,
    namespace: &str,
) -> Result<Option<Action>> {
    let pending =
        final_backup::pending::<DependencyResourceBackupPolicy>(dependency, context, namespace);
    let Some(waiting) = pending.await? else {
        return Ok(None);
    };
    block(dependency, context, namespace, waiting.message).await?;
    Ok(Some(waiting.next))
}

/// Shows why the deletion waits on the dependency's `DeletionBlocked` condition (an event
/// when that changes).
async fn block(
    dependency: &DependencyResource,
    context: &Context,
    namespace: &str,
    message: String,
) -> Result<()> {
    let current = dependency.status.clone().unwrap_or_default();
    let shown = condition::find(&current.conditions, DELETION_BLOCKED).map(|c| &c.message);
    if shown == Some(&message) {
        return Ok(());
    }
    let stamp = Stamp {
        generation: dependency.metadata.generation,
        now: Timestamp::now(),
    };
    let mut status = current.clone();
    condition::merge(
        &mut status.conditions,
        stamp.holds(DELETION_BLOCKED, REASON, message.clone()),
    );
    let api = Api::<DependencyResource>::namespaced(context.client.clone(), namespace);
    StatusWriter::new(&api, dependency)
        .apply(Some(&current), &status)
        .await?;
    use kube::Resource as _;
    context
        .publish_event(
            &dependency.object_ref(&()),
            final_backup::event_type(&message),
            REASON,
            message,
        )
        .await;
    Ok(())
}
