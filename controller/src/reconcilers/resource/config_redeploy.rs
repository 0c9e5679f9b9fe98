//! Configuration redeploys: a new attempt when the configuration the latest attempt ran with
//! changed without the Resource's generation moving (a secret rotated, a variable set…).

use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::Resource;
use kube::ResourceExt;

use crate::cache::Caches;
use crate::context::Context;
use crate::reconcilers::deployment::config;

/// Whether a configuration change calls for a new attempt: with auto-deploy on and nothing
/// running, the configuration changed since the latest attempt (a secret rotated, an
/// environment variable set…: nothing that bumps the Resource's generation), as a spec change
/// would.
pub(super) fn config_changed(
    resource: &Resource,
    context: &Context,
    namespace: &str,
    deployments: &[Deployment],
) -> bool {
    let policy = &resource.spec.auto_deploy;
    if !policy.enabled || policy.blocked(resource.spec.source.as_ref()) {
        return false;
    }
    let Some(latest) = deployments.last() else {
        return false;
    };
    let status = latest.status.as_ref();
    let idle = status
        .and_then(|s| s.status)
        .is_some_and(DeploymentState::is_terminal);
    // Attempts from before fingerprints existed say nothing about what changed.
    let Some(used) = status.and_then(|s| s.config_fingerprint.as_ref()) else {
        return false;
    };
    if !idle || !config_sources_remain(context, namespace, resource) {
        return false;
    }
    let entries = config::lasting_entries(context, namespace, resource);
    berth_crds::config::fingerprint(&entries) != *used
}

/// The fingerprint of the resource's configuration as it is now, which the serving attempt's
/// `configFingerprint` is compared with (`Deployed` condition); `None` while its organization,
/// project or environment are going away.
pub(super) fn current_fingerprint(
    resource: &Resource,
    context: &Context,
    namespace: &str,
) -> Option<String> {
    if !config_sources_remain(context, namespace, resource) {
        return None;
    }
    let entries = config::lasting_entries(context, namespace, resource);
    Some(berth_crds::config::fingerprint(&entries))
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
