//! The controller's view of the cluster (DESIGN §5a): one watch per kind feeds an in-memory
//! store that every reconciler reads, so a reconcile costs no API request. The same watch is
//! shared, through subscriptions, with the controllers that react to the kind.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use berth_crds::certificate::Certificate;
use berth_crds::deployment::Deployment;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::member::Member;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::Resource;
use berth_crds::retention_policy::RetentionPolicy;
use berth_crds::server::Server;
use berth_crds::ssh_credential::SshCredential;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::threshold_policy::ThresholdPolicy;
use futures::channel::mpsc::{self, UnboundedReceiver, UnboundedSender};
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde::de::DeserializeOwned;

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
    pub certificates: Store<Certificate>,
    pub members: Store<Member>,
    pub retention_policies: Store<RetentionPolicy>,
    /// Berth's own namespaces (labelled managed), which the organization controller owns.
    pub namespaces: Store<Namespace>,
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
    pub certificates: Feed<Certificate>,
    pub members: Feed<Member>,
    pub retention_policies: Feed<RetentionPolicy>,
    pub namespaces: Feed<Namespace>,
}

/// One subscriber's copy of a kind's changes: each object as the watch reported it, once the
/// store holds that state. Unbounded, so that no subscriber can hold the watch (and every other
/// subscriber) up; a kube `Controller` drains its triggers at once.
pub type Subscription<K> = UnboundedReceiver<Arc<K>>;

/// One kind's store writer and its subscribers.
pub struct Feed<K: kube::Resource<DynamicType = ()> + Clone + 'static> {
    writer: reflector::store::Writer<K>,
    subscribers: Mutex<Vec<Subscriber<K>>>,
    /// Whether field managers and kubectl's last-applied copy are dropped (see
    /// [`berth_crds::trim_for_cache`]).
    trim: bool,
    /// The label selector of the watch, when only some objects of the kind are Berth's.
    labels: Option<&'static str>,
}

struct Subscriber<K> {
    sender: UnboundedSender<Arc<K>>,
    /// Whether deleted objects are passed on too.
    deletions: bool,
}

impl<K> Feed<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync,
{
    fn new() -> (Store<K>, Self) {
        Self::with_trim(true)
    }

    /// A feed whose objects keep their field managers, for readers that need them.
    fn untrimmed() -> (Store<K>, Self) {
        Self::with_trim(false)
    }

    /// A feed of only the objects that carry `label`.
    fn labelled(label: &'static str) -> (Store<K>, Self) {
        let (store, mut feed) = Self::new();
        feed.labels = Some(label);
        (store, feed)
    }

    fn with_trim(trim: bool) -> (Store<K>, Self) {
        let writer = reflector::store::Writer::default();
        let feed = Self {
            subscribers: Mutex::default(),
            writer,
            trim,
            labels: None,
        };
        (feed.store(), feed)
    }

    /// The store this feed fills (the one [`Caches`] holds).
    pub fn store(&self) -> Store<K> {
        self.writer.as_reader()
    }

    /// Every object of the kind as it is added or changes (not deletions), in order; after a
    /// re-list, every object again.
    pub fn subscribe(&self) -> Subscription<K> {
        self.add_subscriber(false)
    }

    /// Every object of the kind as it is added, changes or is deleted: for a controller that
    /// reacts to the kind (`watches_shared_stream`), as a deletion matters to it too.
    pub fn subscribe_touched(&self) -> Subscription<K> {
        self.add_subscriber(true)
    }

    fn add_subscriber(&self, deletions: bool) -> Subscription<K> {
        let (sender, receiver) = mpsc::unbounded();
        let subscriber = Subscriber { sender, deletions };
        self.subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(subscriber);
        receiver
    }

    /// Watches the kind cluster-wide into the store until the process stops.
    async fn run(self, client: Client) {
        let config = match self.labels {
            Some(labels) => watcher::Config::default().labels(labels),
            None => watcher::Config::default(),
        };
        let events = watcher(Api::<K>::all(client), config).default_backoff();
        self.reflect(events).await;
    }

    /// Applies `events` to the store, then passes each on to the subscribers. (kube's shared
    /// stores are not used: their subscription stalls, without waking its task, when an
    /// object is deleted before the subscriber reads its change, and then holds up the watch
    /// and every other subscriber of the kind.)
    async fn reflect(self, events: impl Stream<Item = watcher::Result<watcher::Event<K>>>) {
        let (kind, trim) = (K::kind(&()), self.trim);
        let mut writer = self.writer;
        let subscribers = self
            .subscribers
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        events
            .for_each(|event| {
                match event {
                    Ok(event) => {
                        let event = if trim {
                            event.modify(berth_crds::trim_for_cache)
                        } else {
                            event
                        };
                        writer.apply_watcher_event(&event);
                        dispatch(&subscribers, &event, &writer.as_reader());
                    }
                    Err(error) => tracing::warn!(%kind, %error, "watch failed; retrying"),
                }
                std::future::ready(())
            })
            .await;
    }
}

/// Passes one applied watch event on: a change to every subscriber, a deletion to those that
/// asked for them, and the end of a (re-)list as every object the store now holds.
fn dispatch<K: kube::Resource<DynamicType = ()> + Clone>(
    subscribers: &[Subscriber<K>],
    event: &watcher::Event<K>,
    store: &Store<K>,
) {
    let send = |objects: &[Arc<K>], deleted: bool| {
        for subscriber in subscribers.iter().filter(|s| s.deletions || !deleted) {
            for object in objects {
                // A subscriber that ended (on shutdown) needs nothing more.
                let _ = subscriber.sender.unbounded_send(object.clone());
            }
        }
    };
    match event {
        // The store's own copy: a subscriber that keeps it, or a queue of changes not read
        // yet, holds no second copy of the object.
        watcher::Event::Apply(object) => {
            let stored = store.get(&ObjectRef::from_obj(object));
            send(&[stored.unwrap_or_else(|| Arc::new(object.clone()))], false)
        }
        watcher::Event::Delete(object) => send(&[Arc::new(object.clone())], true),
        watcher::Event::InitDone => send(&store.state(), false),
        watcher::Event::Init | watcher::Event::InitApply(_) => {}
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
        // Policy bookkeeping names the field manager that last wrote the spec.
        let (threshold_policies, threshold_policies_feed) = Feed::untrimmed();
        let (domain_bindings, domain_bindings_feed) = Feed::new();
        let (storage_volumes, storage_volumes_feed) = Feed::new();
        let (certificates, certificates_feed) = Feed::new();
        let (members, members_feed) = Feed::new();
        let (retention_policies, retention_policies_feed) = Feed::untrimmed();
        let (namespaces, namespaces_feed) = Feed::labelled(berth_crds::MANAGED_LABEL);
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
            certificates,
            members,
            retention_policies,
            namespaces,
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
            certificates: certificates_feed,
            members: members_feed,
            retention_policies: retention_policies_feed,
            namespaces: namespaces_feed,
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
            self.certificates.wait_until_ready(),
            self.members.wait_until_ready(),
            self.retention_policies.wait_until_ready(),
            self.namespaces.wait_until_ready(),
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
            self.storage_volumes.run(client.clone()),
            self.certificates.run(client.clone()),
            self.members.run(client.clone()),
            self.retention_policies.run(client.clone()),
            self.namespaces.run(client),
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

// Unit tests fill the stores by hand, as the watch would.
#[cfg(test)]
impl<K> Feed<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync,
{
    pub fn put(&mut self, object: K) {
        self.writer
            .apply_watcher_event(&watcher::Event::Apply(object));
    }
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

    /// What a watch of projects yields.
    type Event = watcher::Result<watcher::Event<Project>>;

    #[tokio::test]
    async fn a_touched_subscription_sees_a_deletion_once_the_store_forgot_the_object() {
        let (store, feed) = Feed::<Project>::new();
        let mut touched = feed.subscribe_touched();
        let (send, events) = mpsc::unbounded::<Event>();
        let steps = async {
            let shop = Project::clone(&project("shop", "a"));
            send.unbounded_send(Ok(watcher::Event::Apply(shop.clone())))
                .unwrap();
            assert_eq!(touched.next().await.unwrap().name_any(), "shop");
            send.unbounded_send(Ok(watcher::Event::Delete(shop)))
                .unwrap();
            assert_eq!(touched.next().await.unwrap().name_any(), "shop");
            assert!(Caches::get(&store, "org-a", "shop").is_none());
            drop(send);
            assert!(touched.next().await.is_none(), "ends with the watch");
        };
        let both = async { tokio::join!(feed.reflect(events), steps) };
        let waited = tokio::time::timeout(std::time::Duration::from_secs(10), both).await;
        waited.expect("every change and the deletion arrive");
    }

    /// kube's shared-store subscription went quiet here: the change of an object deleted
    /// before it was read made it return `Pending` with no waker, and nothing after it came.
    #[tokio::test]
    async fn a_change_read_after_its_object_was_deleted_does_not_stop_the_subscription() {
        let (_store, feed) = Feed::<Project>::new();
        let mut changes = feed.subscribe();
        let (send, events) = mpsc::unbounded::<Event>();
        let gone = Project::clone(&project("gone", "a"));
        send.unbounded_send(Ok(watcher::Event::Apply(gone.clone())))
            .unwrap();
        send.unbounded_send(Ok(watcher::Event::Delete(gone)))
            .unwrap();
        let shop = Project::clone(&project("shop", "a"));
        send.unbounded_send(Ok(watcher::Event::Apply(shop)))
            .unwrap();
        drop(send);
        // Every event is applied before the subscriber reads a thing.
        feed.reflect(events).await;
        let read = async {
            let first = changes.next().await.unwrap().name_any();
            let second = changes.next().await.unwrap().name_any();
            (first, second, changes.next().await.is_none())
        };
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), read).await;
        let (first, second, ended) = read.expect("the subscription keeps delivering");
        assert_eq!((first.as_str(), second.as_str()), ("gone", "shop"));
        assert!(ended, "a plain subscription is not told of the deletion");
    }

    /// Memory: a change passed on is the store's own object, not a copy of it.
    #[tokio::test]
    async fn a_subscriber_gets_the_stores_copy_of_a_change() {
        let (store, feed) = Feed::<Project>::new();
        let mut changes = feed.subscribe();
        let (send, events) = mpsc::unbounded::<Event>();
        send.unbounded_send(Ok(watcher::Event::Apply(Project::clone(&project(
            "shop", "a",
        )))))
        .unwrap();
        drop(send);
        feed.reflect(events).await;
        let received = changes.next().await.unwrap();
        let stored = Caches::get(&store, "org-a", "shop").unwrap();
        assert!(Arc::ptr_eq(&received, &stored));
    }

    #[tokio::test]
    async fn only_untrimmed_feeds_keep_field_managers() {
        for (kept, (store, feed)) in [(false, Feed::new()), (true, Feed::untrimmed())] {
            let mut shop = Project::clone(&project("shop", "a"));
            shop.metadata.managed_fields = Some(vec![Default::default()]);
            let (send, events) = mpsc::unbounded::<Event>();
            send.unbounded_send(Ok(watcher::Event::Apply(shop)))
                .unwrap();
            drop(send);
            feed.reflect(events).await;
            let cached = Caches::get(&store, "org-a", "shop").unwrap();
            assert_eq!(cached.metadata.managed_fields.is_some(), kept);
        }
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
