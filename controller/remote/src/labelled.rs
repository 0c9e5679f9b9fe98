//! The containers, networks and volumes a server holds under given labels: how a preview's
//! cleanup finds what its owners' own cleanups left, and how the shim's leftovers check lists
//! what is left of previews that are gone.

use std::collections::HashMap;

use bollard::Docker;
use bollard::models::NetworkDisconnectRequest;
use bollard::query_parameters::{
    InspectNetworkOptions, ListContainersOptionsBuilder, ListNetworksOptionsBuilder,
    ListVolumesOptionsBuilder, RemoveContainerOptionsBuilder, RemoveVolumeOptions,
};

use crate::connection::ServerConnection;
use crate::docker::{docker_call, is_not_found, is_not_on_network};
use crate::error::RemoteError;

/// What kind of thing a server holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Container,
    Network,
    Volume,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Container => "container",
            Self::Network => "network",
            Self::Volume => "volume",
        }
    }
}

/// One labelled thing on a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labelled {
    pub kind: Kind,
    pub name: String,
    pub labels: HashMap<String, String>,
}

/// Everything on the server carrying all of `labels` (Docker's `label` filters: `key` for any
/// value, `key=value` for one), containers first (they hold the networks and volumes).
pub async fn list(
    connection: &ServerConnection,
    docker: &Docker,
    labels: &[String],
) -> Result<Vec<Labelled>, RemoteError> {
    let filters = HashMap::from([("label".to_string(), labels.to_vec())]);
    let containers = ListContainersOptionsBuilder::new()
        .all(true)
        .filters(&filters)
        .build();
    let (containers, networks, volumes) = tokio::try_join!(
        docker_call(
            connection,
            "listing labelled containers",
            docker.list_containers(Some(containers)),
        ),
        docker_call(
            connection,
            "listing labelled networks",
            docker.list_networks(Some(
                ListNetworksOptionsBuilder::new().filters(&filters).build()
            )),
        ),
        docker_call(
            connection,
            "listing labelled volumes",
            docker.list_volumes(Some(
                ListVolumesOptionsBuilder::new().filters(&filters).build()
            )),
        ),
    )?;
    let containers = containers.into_iter().filter_map(|c| {
        let name = c.names?.into_iter().next()?;
        let name = name.trim_start_matches('/').to_string();
        Some((Kind::Container, name, c.labels.unwrap_or_default()))
    });
    let networks = networks
        .into_iter()
        .filter_map(|n| Some((Kind::Network, n.name?, n.labels.unwrap_or_default())));
    let volumes = volumes
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|v| (Kind::Volume, v.name, v.labels));
    Ok(containers
        .chain(networks)
        .chain(volumes)
        .map(|(kind, name, labels)| Labelled { kind, name, labels })
        .collect())
}

/// Removes `item` (a container even while it runs, a volume with its data); one already gone is
/// fine.
pub async fn remove(
    connection: &ServerConnection,
    docker: &Docker,
    item: &Labelled,
) -> Result<(), RemoteError> {
    let name = item.name.as_str();
    let removed = match item.kind {
        Kind::Container => {
            let options = RemoveContainerOptionsBuilder::new().force(true).build();
            docker_call(
                connection,
                "removing a labelled container",
                docker.remove_container(name, Some(options)),
            )
            .await
        }
        Kind::Network => {
            disconnect_all(connection, docker, name).await?;
            docker_call(
                connection,
                "removing a labelled network",
                docker.remove_network(name),
            )
            .await
        }
        Kind::Volume => {
            docker_call(
                connection,
                "removing a labelled volume",
                docker.remove_volume(name, None::<RemoveVolumeOptions>),
            )
            .await
        }
    };
    match removed {
        Err(error) if !is_not_found(&error) => Err(error),
        _ => Ok(()),
    }
}

/// Takes every container still on `network` off it (Docker refuses to remove a network in use):
/// an edge proxy, which joins every preview network on its host — several Servers may share
/// one Docker host, each with its own proxy.
async fn disconnect_all(
    connection: &ServerConnection,
    docker: &Docker,
    network: &str,
) -> Result<(), RemoteError> {
    let inspected = docker_call(
        connection,
        "inspecting a labelled network",
        docker.inspect_network(network, None::<InspectNetworkOptions>),
    )
    .await;
    let attached = match inspected {
        Ok(network) => network.containers.unwrap_or_default(),
        Err(error) if is_not_found(&error) => return Ok(()),
        Err(error) => return Err(error),
    };
    for container in attached.into_keys() {
        let leave = NetworkDisconnectRequest {
            container,
            force: Some(true),
        };
        let left = docker_call(
            connection,
            "disconnecting a container from a labelled network",
            docker.disconnect_network(network, leave),
        )
        .await;
        // Inspect may still list a container that has just left (or stopped).
        match left {
            Err(error) if !is_not_on_network(&error) => return Err(error),
            _ => {}
        }
    }
    Ok(())
}
