//! The preview networks the edge proxy joins besides the shared edge network: each preview
//! serves on a network of its own, reached only through the proxy. A proxy made again (new
//! settings, removed by hand) joins every preview network on the host again.

use std::collections::HashMap;

use berth_crds::preview::PREVIEW_NETWORK_PREFIX;
use bollard::models::{NetworkConnectRequest, NetworkDisconnectRequest};
use bollard::query_parameters::ListNetworksOptionsBuilder;

use super::EdgeProxy;
use crate::docker::{docker_call, is_already_on_network, is_not_on_network};
use crate::error::RemoteError;

impl EdgeProxy {
    /// Connects the proxy to `network`; already connected is fine.
    pub async fn join_network(&self, network: &str) -> Result<(), RemoteError> {
        let join = NetworkConnectRequest {
            container: self.names.container.clone(),
            endpoint_config: None,
        };
        let joined = docker_call(
            &self.connection,
            "connecting the edge proxy to a preview network",
            self.docker.connect_network(network, join),
        )
        .await;
        match joined {
            Err(error) if is_already_on_network(&error) => Ok(()),
            other => other,
        }
    }

    /// Disconnects the proxy from `network`; not connected (or no network) is fine.
    pub async fn leave_network(&self, network: &str) -> Result<(), RemoteError> {
        let leave = NetworkDisconnectRequest {
            container: self.names.container.clone(),
            force: Some(true),
        };
        let left = docker_call(
            &self.connection,
            "disconnecting the edge proxy from a preview network",
            self.docker.disconnect_network(network, leave),
        )
        .await;
        match left {
            Err(error) if is_not_on_network(&error) => Ok(()),
            other => other,
        }
    }

    /// Joins every preview network on the host (after the proxy container was made again).
    pub(super) async fn rejoin_preview_networks(&self) -> Result<(), RemoteError> {
        let filters = HashMap::from([("name", vec![PREVIEW_NETWORK_PREFIX])]);
        let options = ListNetworksOptionsBuilder::new().filters(&filters).build();
        let networks = docker_call(
            &self.connection,
            "listing the preview networks",
            self.docker.list_networks(Some(options)),
        )
        .await?;
        for network in networks.into_iter().filter_map(|n| n.name) {
            if network.starts_with(PREVIEW_NETWORK_PREFIX) {
                self.join_network(&network).await?;
            }
        }
        Ok(())
    }
}
