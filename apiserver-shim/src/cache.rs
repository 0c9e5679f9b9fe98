//! Reflector caches: reads are served from memory, kept current by watches on the API server.
//! After a write, handlers wait for the cache to catch up, so a client reads its own writes.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::backup::{BackupTarget, DependencyResourceBackup, DependencyResourceRestore};
use berth_crds::backup_policy::{DependencyResourceBackupPolicy, StorageVolumeBackupPolicy};
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::deploy_token::DeployToken;
use berth_crds::deployment::Deployment;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::invitation::Invitation;
use berth_crds::member::Member;
use berth_crds::notification::{NotificationChannel, NotificationDelivery};
use berth_crds::organization::Organization;
use berth_crds::overlay_decision::OverlayDecision;
use berth_crds::preview::{PreviewEnvironment, PreviewPolicy};
use berth_crds::project::Project;
use berth_crds::resource::Resource as BerthResource;
use berth_crds::retention_policy::RetentionPolicy;
use berth_crds::route_surface_decision::RouteSurfaceDecision;
use berth_crds::scheduled_task::{ScheduledTask, ScheduledTaskRun};
use berth_crds::server::Server;
use berth_crds::session::Session;
use berth_crds::ssh_credential::SshCredential;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::threshold_policy::ThresholdPolicy;
use berth_crds::usage_intent::UsageIntent;
use berth_crds::user::User;
use berth_crds::volume_backup::{StorageVolumeBackup, StorageVolumeRestore};
use futures::StreamExt;
use k8s_openapi::api::events::v1::Event as KubeEvent;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

use crate::changes::{ChangeLog, ChangedObject, WatchChanges, WatchedVersion};
use crate::error::ApiError;

/// How long a handler waits for its own write to show up in the cache.
const CATCH_UP: Duration = Duration::from_secs(5);

/// One cache per kind the REST API reads.
#[derive(Clone)]
pub struct Caches {
    pub organizations: Store<Organization>,
    pub users: Store<User>,
    pub sessions: Store<Session>,
    pub members: Store<Member>,
    pub invitations: Store<Invitation>,
    pub projects: Store<Project>,
    pub environments: Store<Environment>,
    pub deploy_tokens: Store<DeployToken>,
    pub usage_intents: Store<UsageIntent>,
    pub overlay_decisions: Store<OverlayDecision>,
    pub route_surface_decisions: Store<RouteSurfaceDecision>,
    pub servers: Store<Server>,
    pub ssh_credentials: Store<SshCredential>,
    pub resources: Store<BerthResource>,
    /// Read by name only (health, diagnostics, runtime logs); see `domain::objects::find_deployment`.
    pub deployments: Store<Deployment>,
    pub threshold_policies: Store<ThresholdPolicy>,
    pub retention_policies: Store<RetentionPolicy>,
    pub domain_bindings: Store<DomainBinding>,
    pub storage_volumes: Store<StorageVolume>,
    pub dependency_resources: Store<DependencyResource>,
    pub backups: Store<DependencyResourceBackup>,
    pub backup_targets: Store<BackupTarget>,
    pub backup_policies: Store<DependencyResourceBackupPolicy>,
    pub volume_backup_policies: Store<StorageVolumeBackupPolicy>,
    pub restores: Store<DependencyResourceRestore>,
    pub volume_backups: Store<StorageVolumeBackup>,
    pub volume_restores: Store<StorageVolumeRestore>,
    pub scheduled_tasks: Store<ScheduledTask>,
    pub scheduled_task_runs: Store<ScheduledTaskRun>,
    pub notification_channels: Store<NotificationChannel>,
    pub notification_deliveries: Store<NotificationDelivery>,
    /// Which pull requests get previews, per project or resource.
    pub preview_policies: Store<PreviewPolicy>,
    /// The previews of pull requests (written by webhooks, removed by the controller).
    pub preview_environments: Store<PreviewEnvironment>,
    /// Kubernetes Events (events.k8s.io) of every namespace: the objects' side of the audit
    /// events. The API server expires them (an hour by default).
    pub kube_events: Store<KubeEvent>,
    /// Each Event as it is cached (new or updated), for the audit records that keep them
    /// (`crate::audit::controller_events`). A reader that falls behind is told it lagged.
    pub kube_event_feed: broadcast::Sender<Arc<KubeEvent>>,
    /// Each version of an object of the audited kinds the change feed does not carry.
    pub watched_versions: broadcast::Sender<Arc<WatchedVersion>>,
    /// Changes of the kinds the change feed reports, in order (its source).
    pub changes: Arc<ChangeLog>,
}

/// Starts a watch-backed cache of every `K` in the cluster. The objects keep their field
/// managers: writes decide from them what the REST API owns (`write.rs`).
fn start<K>(client: &Client) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    start_modified(client, |_| {})
}

/// The same, each object changed by `modify` before it is cached.
fn start_modified<K>(client: &Client, modify: impl FnMut(&mut K) + Send + 'static) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let stream = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .modify(modify)
        .reflect(writer)
        .applied_objects();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            if let Err(error) = item {
                tracing::warn!(%error, kind = %K::kind(&K::DynamicType::default()), "cache watch error");
            }
        }
    });
    reader
}

/// Events a slow reader of the Event feed may fall behind by before it is told it lagged.
const EVENT_FEED: usize = 1024;

/// The Event cache, each Event (without its field managers) also sent to `feed`.
fn start_events(client: &Client, feed: broadcast::Sender<Arc<KubeEvent>>) -> Store<KubeEvent> {
    let (reader, writer) = reflector::store();
    let stream = watcher(
        Api::<KubeEvent>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(|event: &mut KubeEvent| event.metadata.managed_fields = None)
    .reflect(writer)
    .applied_objects();
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                // No reader (none started yet): nothing to tell.
                Ok(event) => drop(feed.send(Arc::new(event))),
                Err(error) => tracing::warn!(%error, kind = "Event", "cache watch error"),
            }
        }
    });
    reader
}

/// The same, each version of an object also sent to `feed`.
fn start_watched<K>(client: &Client, feed: broadcast::Sender<Arc<WatchedVersion>>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync,
    K: 'static,
{
    let (reader, writer) = reflector::store();
    let stream = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .reflect(writer);
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                // No reader (none started yet): nothing to tell.
                Ok(event) => {
                    if let Some(version) = WatchedVersion::of(&event) {
                        drop(feed.send(Arc::new(version)));
                    }
                }
                Err(error) => tracing::warn!(%error, kind = %K::kind(&()), "cache watch error"),
            }
        }
    });
    reader
}

/// The same, each change of an object also appended to `log`.
fn start_logged<K>(
    client: &Client,
    modify: impl FnMut(&mut K) + Send + 'static,
    log: Arc<ChangeLog>,
    wrap: fn(Arc<K>) -> ChangedObject,
) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let mut changes = WatchChanges::new(reader.clone(), wrap);
    let stream = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .modify(modify)
        .reflect(writer);
    tokio::spawn(async move {
        futures::pin_mut!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => {
                    for (deleted, object) in changes.on(&event) {
                        log.push(deleted, object);
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, kind = %K::kind(&K::DynamicType::default()), "cache watch error")
                }
            }
        }
    });
    reader
}

/// Deployments are read-only here and numerous: trimmed of what no read uses, after noting
/// which field manager created one applied with kubectl or a GitOps tool (its actor).
fn trim_deployment(deployment: &mut Deployment) {
    // The manager owning `spec.resourceId` wrote the attempt (a later cancel owns only
    // `spec.cancelRequested`, the controller only the status).
    let creator = deployment
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|entry| {
            entry.subresource.as_deref().unwrap_or_default().is_empty()
                && entry
                    .fields_v1
                    .as_ref()
                    .is_some_and(|fields| fields.0.pointer("/f:spec/f:resourceId").is_some())
        })
        .and_then(|entry| entry.manager.clone());
    if let Some(creator) = creator {
        deployment
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(CREATED_BY_MANAGER.to_string(), creator);
    }
    berth_crds::trim_for_cache(deployment);
}

/// Annotation the cache adds to its copy of a Deployment: the field manager that created it.
pub const CREATED_BY_MANAGER: &str = "berth.dev/created-by-manager";

impl Caches {
    pub fn start(client: &Client) -> Self {
        let changes = Arc::new(ChangeLog::default());
        let (kube_event_feed, _) = broadcast::channel(EVENT_FEED);
        let (watched_versions, _) = broadcast::channel(EVENT_FEED);
        Self {
            organizations: start(client),
            users: start(client),
            sessions: start(client),
            members: start_watched(client, watched_versions.clone()),
            invitations: start(client),
            projects: start_watched(client, watched_versions.clone()),
            environments: start_logged(client, |_| {}, changes.clone(), ChangedObject::Environment),
            deploy_tokens: start_watched(client, watched_versions.clone()),
            usage_intents: start(client),
            overlay_decisions: start(client),
            route_surface_decisions: start(client),
            servers: start_logged(client, |_| {}, changes.clone(), ChangedObject::Server),
            ssh_credentials: start_watched(client, watched_versions.clone()),
            resources: start_logged(client, |_| {}, changes.clone(), ChangedObject::Resource),
            deployments: start_logged(
                client,
                trim_deployment,
                changes.clone(),
                ChangedObject::Deployment,
            ),
            threshold_policies: start_watched(client, watched_versions.clone()),
            retention_policies: start_watched(client, watched_versions.clone()),
            domain_bindings: start_logged(
                client,
                |_| {},
                changes.clone(),
                ChangedObject::DomainBinding,
            ),
            storage_volumes: start_logged(
                client,
                |_| {},
                changes.clone(),
                ChangedObject::StorageVolume,
            ),
            dependency_resources: start_watched(client, watched_versions.clone()),
            backups: start(client),
            backup_targets: start_watched(client, watched_versions.clone()),
            backup_policies: start_watched(client, watched_versions.clone()),
            volume_backup_policies: start_watched(client, watched_versions.clone()),
            restores: start(client),
            volume_backups: start(client),
            volume_restores: start(client),
            scheduled_tasks: start_logged(
                client,
                |_| {},
                changes.clone(),
                ChangedObject::ScheduledTask,
            ),
            scheduled_task_runs: start_logged(
                client,
                |_| {},
                changes.clone(),
                ChangedObject::ScheduledTaskRun,
            ),
            notification_channels: start_logged(
                client,
                |_| {},
                changes.clone(),
                ChangedObject::NotificationChannel,
            ),
            notification_deliveries: start_logged(
                client,
                |_| {},
                changes.clone(),
                ChangedObject::NotificationDelivery,
            ),
            preview_policies: start_watched(client, watched_versions.clone()),
            preview_environments: start(client),
            kube_events: start_events(client, kube_event_feed.clone()),
            kube_event_feed,
            watched_versions,
            changes,
        }
    }

    /// Waits until every cache has listed once.
    pub async fn wait_until_ready(&self) -> anyhow::Result<()> {
        tokio::try_join!(
            self.organizations.wait_until_ready(),
            self.users.wait_until_ready(),
            self.sessions.wait_until_ready(),
            self.members.wait_until_ready(),
            self.invitations.wait_until_ready(),
            self.projects.wait_until_ready(),
            self.environments.wait_until_ready(),
            self.deploy_tokens.wait_until_ready(),
            self.usage_intents.wait_until_ready(),
            self.overlay_decisions.wait_until_ready(),
            self.route_surface_decisions.wait_until_ready(),
            self.servers.wait_until_ready(),
            self.ssh_credentials.wait_until_ready(),
            self.resources.wait_until_ready(),
            self.deployments.wait_until_ready(),
            self.threshold_policies.wait_until_ready(),
            self.retention_policies.wait_until_ready(),
            self.domain_bindings.wait_until_ready(),
            self.storage_volumes.wait_until_ready(),
            self.dependency_resources.wait_until_ready(),
            self.backups.wait_until_ready(),
            self.backup_targets.wait_until_ready(),
            self.backup_policies.wait_until_ready(),
            self.volume_backup_policies.wait_until_ready(),
            self.restores.wait_until_ready(),
            self.volume_backups.wait_until_ready(),
            self.volume_restores.wait_until_ready(),
            self.scheduled_tasks.wait_until_ready(),
            self.scheduled_task_runs.wait_until_ready(),
            self.notification_channels.wait_until_ready(),
            self.notification_deliveries.wait_until_ready(),
            self.preview_policies.wait_until_ready(),
            self.preview_environments.wait_until_ready(),
            self.kube_events.wait_until_ready(),
        )?;
        Ok(())
    }
}

/// Waits until `store` holds `written` (or something newer), so a following read sees it.
pub async fn catch_up<K>(store: &Store<K>, written: &K) -> Result<(), ApiError>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let wanted = version_number(written);
    let shown = |cached: Option<&K>| cached.is_some_and(|object| version_number(object) >= wanted);
    wait_for(store, &ObjectRef::from_obj(written), shown)
        .await
        .map_err(|_| {
            ApiError::unavailable(
                "the write succeeded but the cache has not caught up; retry the read",
            )
        })
}

/// Waits until the cache shows a delete of `object`: gone, or marked for deletion (`marked`,
/// what the delete call returned while finalizers run). Finalizers can finish before the
/// cache ever sees the mark, so gone counts in both cases.
pub async fn wait_deleted<K>(
    store: &Store<K>,
    object: &K,
    marked: Option<K>,
) -> Result<(), ApiError>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let marked_version = marked.as_ref().map(version_number);
    let shown = |cached: Option<&K>| match (cached, marked_version) {
        (None, _) => true,
        (Some(object), Some(wanted)) => version_number(object) >= wanted,
        (Some(_), None) => false,
    };
    wait_for(store, &ObjectRef::from_obj(object), shown)
        .await
        .map_err(|_| ApiError::unavailable("the delete succeeded but the cache has not caught up"))
}

/// Waits until the cache no longer holds `object` (a finalizer released), up to [`CATCH_UP`];
/// `Err` when it is still there.
pub async fn wait_gone<K>(store: &Store<K>, object: &K) -> Result<(), ()>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    wait_for(store, &ObjectRef::from_obj(object), |cached| {
        cached.is_none()
    })
    .await
}

/// Waits until the cache no longer holds `object`, up to `within`, looking every
/// `SLOW_POLL`: for removals that take seconds (a finalizer tearing down what an object
/// made), where a 10 ms poll would only burn time. `Err` when it is still there.
pub async fn wait_gone_within<K>(store: &Store<K>, object: &K, within: Duration) -> Result<(), ()>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let key = ObjectRef::from_obj(object);
    poll(store, &key, |cached| cached.is_none(), within, SLOW_POLL).await
}

/// How often [`wait_gone_within`] looks.
const SLOW_POLL: Duration = Duration::from_millis(250);

/// Polls the in-memory `store` until `shown` holds for the object at `key`, up to [`CATCH_UP`].
async fn wait_for<K>(
    store: &Store<K>,
    key: &ObjectRef<K>,
    shown: impl Fn(Option<&K>) -> bool,
) -> Result<(), ()>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    poll(store, key, shown, CATCH_UP, Duration::from_millis(10)).await
}

/// Polls `store` every `every` until `shown` holds for the object at `key`, up to `within`.
async fn poll<K>(
    store: &Store<K>,
    key: &ObjectRef<K>,
    shown: impl Fn(Option<&K>) -> bool,
    within: Duration,
    every: Duration,
) -> Result<(), ()>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + Hash + Clone,
{
    let deadline = tokio::time::Instant::now() + within;
    while !shown(store.get(key).as_deref()) {
        if tokio::time::Instant::now() >= deadline {
            return Err(());
        }
        tokio::time::sleep(every).await;
    }
    Ok(())
}

/// etcd resource versions are increasing integers; compare them as such.
fn version_number<K: Resource>(object: &K) -> u64 {
    object
        .resource_version()
        .and_then(|version| version.parse().ok())
        .unwrap_or(0)
}
