//! A stack's own network on the server, which its service containers join by name.

use std::collections::HashMap;

use berth_crds::MANAGED_LABEL;
use berth_remote::RemoteError;
use berth_remote::docker::{docker_call, is_conflict, is_not_found};
use bollard::models::{EndpointSettings, NetworkConnectRequest, NetworkCreateRequest};
use bollard::query_parameters::InspectNetworkOptions;

use super::Target;
use crate::reconcilers::deployment::container_settings::ContainerSettings;

impl Target {
    /// Joins a created container to its stack's network under its service name (Docker takes one
    /// network at creation; the routed container's is the edge network).
    pub async fn join_stack_network(
        &self,
        container: &str,
        settings: &ContainerSettings,
    ) -> Result<(), RemoteError> {
        let Some((network, aliases)) = &settings.network else {
            return Ok(());
        };
        self.ensure_network(network).await?;
        let join = NetworkConnectRequest {
            container: container.to_string(),
            endpoint_config: Some(EndpointSettings {
                aliases: Some(aliases.clone()),
                ..Default::default()
            }),
        };
        docker_call(
            &self.connection,
            "joining the stack network",
            self.docker.connect_network(network, join),
        )
        .await
    }

    /// Creates the stack network unless it exists.
    pub async fn ensure_network(&self, network: &str) -> Result<(), RemoteError> {
        let inspected = docker_call(
            &self.connection,
            "inspecting the stack network",
            self.docker
                .inspect_network(network, None::<InspectNetworkOptions>),
        )
        .await;
        match inspected {
            Ok(_) => return Ok(()),
            Err(error) if is_not_found(&error) => {}
            Err(error) => return Err(error),
        }
        let request = NetworkCreateRequest {
            name: network.to_string(),
            driver: Some("bridge".into()),
            labels: Some(HashMap::from([(
                MANAGED_LABEL.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        };
        match docker_call(
            &self.connection,
            "creating the stack network",
            self.docker.create_network(request),
        )
        .await
        {
            Err(error) if is_conflict(&error) => Ok(()),
            other => other.map(drop),
        }
    }
}
