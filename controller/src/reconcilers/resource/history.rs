//! The attempt history: finished attempts beyond `spec.deploymentHistoryLimit` go, once their
//! timeline is stored.

use std::collections::BTreeSet;

use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::Resource;
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

use super::attempts::{serving, state};
use crate::context::Context;
use crate::error::Result;

/// Removes finished attempts beyond `spec.deploymentHistoryLimit`, oldest first, once their
/// timeline is stored (`recorded`); the running and the serving attempt always stay.
pub(super) async fn prune(
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
