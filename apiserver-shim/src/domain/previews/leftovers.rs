//! The leftovers check: what is left of previews that are gone. Everything a preview makes
//! carries its label — its objects in the cluster, and on its server the containers, networks and
//! volumes its resource, Compose services and databases run on — so whatever still carries
//! the label of a preview that no longer exists is left over. A preview being removed is not
//! gone yet: its own cleanup is still at work.

use std::collections::{BTreeSet, HashMap};

use berth_api::previews::{PreviewLeftover, UncheckedServer};
use berth_crds::NAMESPACE_LABEL;
use berth_crds::preview::PREVIEW_LABEL;
use berth_crds::server::Server;
use berth_remote::docker::docker_over_ssh;
use berth_remote::labelled;
use futures::future::join_all;
use kube::ResourceExt;
use kube::runtime::reflector::Store;

use crate::domain::objects::all_in;
use crate::domain::servers::server_connection;
use crate::services::server_access::remote_error;
use crate::state::AppState;

const ACTION: &str = "list what previews left";

/// One labelled thing found: its kind, name, server (none for a Kubernetes object) and the
/// preview its label names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub kind: String,
    pub name: String,
    pub server: Option<String>,
    pub preview: String,
}

/// What the check found on the servers it read, and the servers it could not.
#[derive(Debug, Default)]
pub struct ServersRead {
    pub found: Vec<Found>,
    pub checked: Vec<String>,
    pub unchecked: Vec<UncheckedServer>,
}

/// The leftovers among `found`: what names a preview not in `previews`, sorted by preview,
/// then where and what it is.
pub fn leftovers(previews: &BTreeSet<String>, found: Vec<Found>) -> Vec<PreviewLeftover> {
    let mut left: Vec<PreviewLeftover> = found
        .into_iter()
        .filter(|f| !previews.contains(&f.preview))
        .map(|f| PreviewLeftover {
            preview_environment_id: f.preview,
            kind: f.kind,
            name: f.name,
            server_id: f.server,
        })
        .collect();
    left.sort();
    left
}

/// The names of the namespace's previews, those being removed included.
pub fn previews_in(state: &AppState, namespace: &str) -> BTreeSet<String> {
    all_in(&state.caches.preview_environments, namespace)
        .iter()
        .map(|preview| preview.name_any())
        .collect()
}

/// The namespace's objects of every kind a preview makes that carry a preview label, from the
/// watch caches. Its copied Secrets are not among them: the shim reads Secrets by name only,
/// never lists them.
pub fn kubernetes_objects(state: &AppState, namespace: &str) -> Vec<Found> {
    let caches = &state.caches;
    [
        labelled_objects(&caches.resources, namespace, "Resource"),
        labelled_objects(&caches.environments, namespace, "Environment"),
        labelled_objects(&caches.deployments, namespace, "Deployment"),
        labelled_objects(&caches.domain_bindings, namespace, "DomainBinding"),
        labelled_objects(
            &caches.dependency_resources,
            namespace,
            "DependencyResource",
        ),
        labelled_objects(&caches.restores, namespace, "DependencyResourceRestore"),
    ]
    .concat()
}

fn labelled_objects<K>(store: &Store<K>, namespace: &str, kind: &str) -> Vec<Found>
where
    K: kube::Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    all_in(store, namespace)
        .iter()
        .filter_map(|object| {
            Some(Found {
                kind: kind.to_string(),
                name: object.name_any(),
                server: None,
                preview: object.labels().get(PREVIEW_LABEL)?.clone(),
            })
        })
        .collect()
}

/// What every server of the namespace holds with a preview's label, read at once; a server
/// not reached is listed with why.
pub async fn server_things(state: &AppState, namespace: &str) -> ServersRead {
    let servers = all_in(&state.caches.servers, namespace);
    let servers = servers
        .iter()
        .filter(|server| server.metadata.deletion_timestamp.is_none());
    let reads = join_all(servers.map(|server| on_server(state, server, namespace))).await;
    let mut read = ServersRead::default();
    for (server, result) in reads {
        match result {
            Ok(found) => {
                read.found.extend(found);
                read.checked.push(server);
            }
            Err(reason) => read.unchecked.push(UncheckedServer {
                server_id: server,
                reason,
            }),
        }
    }
    read.checked.sort();
    read.unchecked.sort_by(|a, b| a.server_id.cmp(&b.server_id));
    read
}

/// The server's name, and what it holds with a preview's label of `namespace` (or why it
/// could not be read).
async fn on_server(
    state: &AppState,
    server: &Server,
    namespace: &str,
) -> (String, Result<Vec<Found>, String>) {
    let id = server.name_any();
    let read = async {
        let (connection, _lease) = server_connection(state, server, ACTION).await?;
        let docker = docker_over_ssh(connection.clone(), &server.spec.docker_socket_path);
        let labels = [
            PREVIEW_LABEL.to_string(),
            format!("{NAMESPACE_LABEL}={namespace}"),
        ];
        labelled::list(&connection, &docker, &labels)
            .await
            .map_err(|error| remote_error(ACTION, error))
    };
    let found = read.await.map_err(|error| error.body.message).map(|items| {
        items
            .into_iter()
            .filter_map(|item| found_on(&id, item.kind.as_str(), item.name, &item.labels))
            .collect()
    });
    (id, found)
}

fn found_on(
    server: &str,
    kind: &str,
    name: String,
    labels: &HashMap<String, String>,
) -> Option<Found> {
    Some(Found {
        kind: kind.to_string(),
        name,
        server: Some(server.to_string()),
        preview: labels.get(PREVIEW_LABEL)?.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(kind: &str, name: &str, server: Option<&str>, preview: &str) -> Found {
        Found {
            kind: kind.into(),
            name: name.into(),
            server: server.map(str::to_string),
            preview: preview.into(),
        }
    }

    #[test]
    fn only_what_names_a_preview_that_is_gone_is_left_over() {
        let previews = BTreeSet::from(["web-pr-2".to_string()]);
        let left = leftovers(
            &previews,
            vec![
                found("volume", "data", Some("edge"), "web-pr-1"),
                found("container", "web-pr-2-a", Some("edge"), "web-pr-2"),
                found("Resource", "web-pr-1", None, "web-pr-1"),
                found("network", "net", Some("edge"), "api-pr-9"),
            ],
        );
        let named: Vec<_> = left
            .iter()
            .map(|l| (l.preview_environment_id.as_str(), l.kind.as_str()))
            .collect();
        assert_eq!(
            named,
            [
                ("api-pr-9", "network"),
                ("web-pr-1", "Resource"),
                ("web-pr-1", "volume")
            ]
        );
        assert_eq!(left[2].server_id.as_deref(), Some("edge"));
    }
}
