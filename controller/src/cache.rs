//! The controller's view of the cluster (DESIGN §5a): one watch per kind feeds an in-memory
//! store that every reconciler reads, so a reconcile costs no API request. The same watch is
//! shared, through subscriptions, with the controllers that react to the kind.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use berth_crds::deployment::Deployment;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::Resource;
use berth_crds::server::Server;
use berth_crds::ssh_credential::SshCredential;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::threshold_policy::ThresholdPolicy;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::{self, ObjectRef, ReflectHandle, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde::de::DeserializeOwned;

/// How many changes a slow subscriber may lag behind before the watch waits for it.
const SUBSCRIBER_BUFFER: usize = 1024;

/// Read handles of every cached kind.
#[derive(Clone)]
pub struct Caches {
    pub resources: Store<Resource>,
    pub deployments: Store<Deployment>,
    pub servers: Store<Server>,
    pub credentials: Store<SshCredential>,
    pub projects: Store<Project>,
    pub environments: Store<Environment>,
    pub organizations: Store<Organization>,
    pub secrets: Store<Secret>,
    /// Read by the server observers, which evaluate the policies on every monitoring tick.
    pub threshold_policies: Store<ThresholdPolicy>,
    pub domain_bindings: Store<DomainBinding>,
    /// Read when an attempt (or a repair) plans a resource's mounts.
    pub storage_volumes: Store<StorageVolume>,
}

/// The writing side of [`Caches`]: subscribe to a kind's changes, then [`Feeds::run`] the
/// watches. Every subscription must be consumed, or the shared watch waits for it.
pub struct Feeds {
    pub resources: Feed<Resource>,
    pub deployments: Feed<Deployment>,
    pub servers: Feed<Server>,
    pub credentials: Feed<SshCredential>,
    pub projects: Feed<Project>,
    pub environments: Feed<Environment>,
    pub organizations: Feed<Organization>,
    pub secrets: Feed<Secret>,
    pub threshold_policies: Feed<ThresholdPolicy>,
    pub domain_bindings: Feed<DomainBinding>,
    pub storage_volumes: Feed<StorageVolume>,
}

/// One kind's store writer.
pub struct Feed<K: kube::Resource<DynamicType = ()> + Clone + 'static> {
    writer: reflector::store::Writer<K>,
}

impl<K> Feed<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync,
{
    fn new() -> (Store<K>, Self) {
        let (reader, writer) = reflector::store_shared(SUBSCRIBER_BUFFER);
        (reader, Self { writer })
    }

    /// Every object of the kind as it is added or changes (not deletions), in order.
    pub fn subscribe(&self) -> ReflectHandle<K> {
        self.writer
            .subscribe()
            .expect("shared stores always accept subscribers")
    }

    /// Watches the kind cluster-wide into the store until the process stops.
    async fn run(self, client: Client) {
        let kind = K::kind(&());
        watcher(Api::<K>::all(client), watcher::Config::default())
            .default_backoff()
            .modify(berth_crds::trim_for_cache)
            .reflect_shared(self.writer)
            .for_each(|event| {
                if let Err(error) = event {
                    tracing::warn!(%kind, %error, "watch failed; retrying");
                }
                std::future::ready(())
            })
            .await;
    }
}

impl Caches {
    /// Empty stores and their feeds; nothing is read until the feeds run.
    pub fn new() -> (Self, Feeds) {
        let (resources, resources_feed) = Feed::new();
        let (deployments, deployments_feed) = Feed::new();
        let (servers, servers_feed) = Feed::new();
        let (credentials, credentials_feed) = Feed::new();
        let (projects, projects_feed) = Feed::new();
        let (environments, environments_feed) = Feed::new();
        let (organizations, organizations_feed) = Feed::new();
        let (secrets, secrets_feed) = Feed::new();
        let (threshold_policies, threshold_policies_feed) = Feed::new();
        let (domain_bindings, domain_bindings_feed) = Feed::new();
        let (storage_volumes, storage_volumes_feed) = Feed::new();
        let caches = Self {
            resources,
            deployments,
            servers,
            credentials,
            projects,
            environments,
            organizations,
            secrets,
            threshold_policies,
            domain_bindings,
            storage_volumes,
        };
        let feeds = Feeds {
            resources: resources_feed,
            deployments: deployments_feed,
            servers: servers_feed,
            credentials: credentials_feed,
            projects: projects_feed,
            environments: environments_feed,
            organizations: organizations_feed,
            secrets: secrets_feed,
            threshold_policies: threshold_policies_feed,
            domain_bindings: domain_bindings_feed,
            storage_volumes: storage_volumes_feed,
        };
        (caches, feeds)
    }

    /// Waits until every store holds its first complete listing.
    pub async fn wait_until_ready(&self) {
        let _ = tokio::join!(
            self.resources.wait_until_ready(),
            self.deployments.wait_until_ready(),
            self.servers.wait_until_ready(),
            self.credentials.wait_until_ready(),
            self.projects.wait_until_ready(),
            self.environments.wait_until_ready(),
            self.organizations.wait_until_ready(),
            self.secrets.wait_until_ready(),
            self.threshold_policies.wait_until_ready(),
            self.domain_bindings.wait_until_ready(),
            self.storage_volumes.wait_until_ready(),
        );
    }

    /// The named object of `store` in `namespace`.
    pub fn get<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<Arc<K>>
    where
        K: kube::Resource<DynamicType = ()> + Clone,
    {
        store.get(&ObjectRef::new(name).within(namespace))
    }

    /// The StorageVolumes `resource`'s attachments name, by id (those that exist).
    pub fn storage_volumes_of(&self, resource: &Resource) -> HashMap<String, Arc<StorageVolume>> {
        let namespace = resource.namespace().unwrap_or_default();
        resource
            .spec
            .storage_attachments
            .iter()
            .filter_map(|a| {
                let volume = Self::get(&self.storage_volumes, &namespace, &a.storage_volume_id)?;
                Some((a.storage_volume_id.clone(), volume))
            })
            .collect()
    }

    /// The Deployments of one Resource, oldest first.
    pub fn deployments_of(&self, namespace: &str, resource: &str) -> Vec<Arc<Deployment>> {
        let mut attempts: Vec<Arc<Deployment>> = self
            .deployments
            .state()
            .into_iter()
            .filter(|d| d.namespace().as_deref() == Some(namespace))
            .filter(|d| d.spec.resource_id == resource)
            .collect();
        attempts.sort_by(|a, b| oldest_first(a, b));
        attempts
    }
}

/// Orders attempts as they were requested, so exactly one is newest.
pub fn oldest_first(a: &Deployment, b: &Deployment) -> std::cmp::Ordering {
    a.attempt_order().cmp(&b.attempt_order())
}

impl Feeds {
    /// Runs every watch until the process stops. Subscribe before calling this.
    pub async fn run(self, client: Client) {
        tokio::join!(
            self.resources.run(client.clone()),
            self.deployments.run(client.clone()),
            self.servers.run(client.clone()),
            self.credentials.run(client.clone()),
            self.projects.run(client.clone()),
            self.environments.run(client.clone()),
            self.organizations.run(client.clone()),
            self.secrets.run(client.clone()),
            self.threshold_policies.run(client.clone()),
            self.domain_bindings.run(client.clone()),
            self.storage_volumes.run(client),
        );
    }
}

/// Passes an object on only when `key` of it differs from the last one passed for the same
/// object: a controller watching another kind reacts to what it depends on, not to every write.
pub fn changed_by<K, S, F>(stream: S, key: F) -> impl Stream<Item = Arc<K>> + Send
where
    K: kube::Resource<DynamicType = ()> + Send + Sync + 'static,
    S: Stream<Item = Arc<K>> + Send,
    F: Fn(&K) -> u64 + Send + Sync + 'static,
{
    let seen: Mutex<HashMap<ObjectRef<K>, u64>> = Mutex::default();
    stream.filter(move |object| {
        let now = key(object);
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        let before = seen.insert(ObjectRef::from_obj(object.as_ref()), now);
        std::future::ready(before != Some(now))
    })
}

/// A hash of anything hashable, for [`changed_by`] keys.
pub fn digest(value: impl Hash) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::project::ProjectSpec;

    fn project(name: &str, description: &str) -> Arc<Project> {
        let spec: ProjectSpec = serde_json::from_value(serde_json::json!({
            "name": name, "description": description,
        }))
        .unwrap();
        let mut project = Project::new(name, spec);
        project.metadata.namespace = Some("org-a".into());
        Arc::new(project)
    }

    #[tokio::test]
    async fn changed_by_passes_only_changes_of_the_key() {
        let stream = futures::stream::iter(vec![
            project("shop", "a"),
            project("shop", "a"),
            project("blog", "a"),
            project("shop", "b"),
        ]);
        let passed: Vec<String> =
            changed_by(stream, |p: &Project| digest(p.spec.description.clone()))
                .map(|p| {
                    format!(
                        "{}:{}",
                        p.name_any(),
                        p.spec.description.clone().unwrap_or_default()
                    )
                })
                .collect()
                .await;
        assert_eq!(passed, ["shop:a", "blog:a", "shop:b"]);
    }
}
