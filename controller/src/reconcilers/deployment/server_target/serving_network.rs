//! The network a preview's container serves on: its own, made before its first container, and
//! joined by the server's edge proxy so that routes reach it. Production's containers serve on
//! the shared edge network, which the proxy makes itself.

use berth_crds::owner_labels;
use berth_remote::RemoteError;
use berth_remote::edge_proxy::EDGE_NETWORK;

use super::Target;
use crate::reconcilers::deployment::plan::Plan;

impl Target {
    /// Makes the plan's serving network exist with the proxy on it (nothing to do for the
    /// shared edge network).
    pub async fn ensure_serving_network(&self, plan: &Plan) -> Result<(), RemoteError> {
        if plan.network == EDGE_NETWORK {
            return Ok(());
        }
        self.ensure_network(&plan.network, &owner_labels(&plan.labels))
            .await?;
        self.proxy.join_network(&plan.network).await
    }

    /// Removes a preview's network once nothing of it runs: the proxy leaves it first (Docker
    /// refuses to remove a network a container is on).
    pub async fn remove_serving_network(&self, network: &str) -> Result<(), RemoteError> {
        if network == EDGE_NETWORK {
            return Ok(());
        }
        self.proxy.leave_network(network).await?;
        self.remove_network(network).await.map(drop)
    }
}
