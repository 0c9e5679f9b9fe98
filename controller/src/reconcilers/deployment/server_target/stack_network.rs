//! Networks a container joins beside the edge network: its stack's own, which its service
//! containers join by name, and the private networks of the dependencies it binds.

use std::collections::HashMap;

use berth_crds::owner_labels;
use berth_remote::RemoteError;
use berth_remote::docker::{docker_call, is_conflict, is_not_found};
use bollard::models::{EndpointSettings, NetworkConnectRequest, NetworkCreateRequest};
use bollard::query_parameters::InspectNetworkOptions;

use super::Target;
use crate::reconcilers::deployment::container_settings::ContainerSettings;
use crate::reconcilers::deployment::plan::Plan;

impl Target {
    /// Joins a created container to the networks beside the edge network: a stack's routed
    /// service answers to its name on the stack's network, and a bound dependency is reached
    /// by its name on its own network (created by the dependency's reconciler, never here).
    pub async fn join_other_networks(&self, plan: &Plan) -> Result<(), RemoteError> {
        if let Some(settings) = &plan.compose {
            self.join_stack_network(&plan.container_name, settings)
                .await?;
        }
        for network in &plan.dependency_networks {
            let join = NetworkConnectRequest {
                container: plan.container_name.clone(),
                endpoint_config: None,
            };
            docker_call(
                &self.connection,
                "joining a bound dependency's network",
                self.docker.connect_network(network, join),
            )
            .await?;
        }
        Ok(())
    }

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
        self.ensure_network(network, &owner_labels(&settings.labels))
            .await?;
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

    /// Creates `network` with `labels` (its owner's, see [`owner_labels`]) unless it exists.
    pub async fn ensure_network(
        &self,
        network: &str,
        labels: &HashMap<String, String>,
    ) -> Result<(), RemoteError> {
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
            labels: Some(labels.clone()),
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

    /// Removes `network`; `false` when there was none.
    pub async fn remove_network(&self, network: &str) -> Result<bool, RemoteError> {
        let removed = docker_call(
            &self.connection,
            "removing a network",
            self.docker.remove_network(network),
        )
        .await;
        match removed {
            Ok(()) => Ok(true),
            Err(error) if is_not_found(&error) => Ok(false),
            Err(error) => Err(error),
        }
    }
}
