//! What changed, in order: every object the watch caches of resources, deployments, servers,
//! domain bindings, scheduled tasks and their runs, notification channels and deliveries,
//! environments and storage volumes see change or go, numbered, kept in memory for a while. The change feed
//! (`GET /events/stream`) and the deployment archive read it from a position of their own;
//! a position older than what is kept is a [`Gap`], after which a reader starts again from the
//! caches. Positions carry the process's epoch, so one from before a restart is a gap too.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use berth_api::activity::{ChangeKind, ChangeType};
use berth_crds::deployment::Deployment;
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::notification::{NotificationChannel, NotificationDelivery};
use berth_crds::resource::Resource;
use berth_crds::scheduled_task::{ScheduledTask, ScheduledTaskRun};
use berth_crds::server::Server;
use berth_crds::storage_volume::StorageVolume;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use tokio::sync::watch;

/// Changes kept for readers that fall behind or reconnect.
pub const KEPT: usize = 10_000;

/// One version of an object of a kind the change feed does not carry (projects, members,
/// policies, …), as its cache's watch saw it: for the audit records of writes made around the
/// REST API (`crate::audit::outside_writes`).
#[derive(Debug, Clone)]
pub struct WatchedVersion {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The object as JSON; `None` once it went.
    pub object: Option<serde_json::Value>,
}

impl WatchedVersion {
    /// The version `event` brings, if it brings one object.
    pub fn of<K: kube::Resource<DynamicType = ()> + serde::Serialize>(
        event: &watcher::Event<K>,
    ) -> Option<Self> {
        let (object, deleted) = match event {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => (o, false),
            watcher::Event::Delete(o) => (o, true),
            watcher::Event::Init | watcher::Event::InitDone => return None,
        };
        Some(Self {
            kind: K::kind(&()).into_owned(),
            namespace: object.namespace().unwrap_or_default(),
            name: object.name_any(),
            object: match deleted {
                true => None,
                false => serde_json::to_value(object).ok(),
            },
        })
    }
}

/// An object as it was when it changed.
#[derive(Debug, Clone)]
pub enum ChangedObject {
    Resource(Arc<Resource>),
    Deployment(Arc<Deployment>),
    Server(Arc<Server>),
    DomainBinding(Arc<DomainBinding>),
    ScheduledTask(Arc<ScheduledTask>),
    ScheduledTaskRun(Arc<ScheduledTaskRun>),
    NotificationChannel(Arc<NotificationChannel>),
    NotificationDelivery(Arc<NotificationDelivery>),
    Environment(Arc<Environment>),
    StorageVolume(Arc<StorageVolume>),
}

impl ChangedObject {
    pub fn namespace(&self) -> String {
        match self {
            Self::Resource(o) => o.namespace(),
            Self::Deployment(o) => o.namespace(),
            Self::Server(o) => o.namespace(),
            Self::DomainBinding(o) => o.namespace(),
            Self::ScheduledTask(o) => o.namespace(),
            Self::ScheduledTaskRun(o) => o.namespace(),
            Self::NotificationChannel(o) => o.namespace(),
            Self::NotificationDelivery(o) => o.namespace(),
            Self::Environment(o) => o.namespace(),
            Self::StorageVolume(o) => o.namespace(),
        }
        .unwrap_or_default()
    }

    pub fn name(&self) -> String {
        match self {
            Self::Resource(o) => o.name_any(),
            Self::Deployment(o) => o.name_any(),
            Self::Server(o) => o.name_any(),
            Self::DomainBinding(o) => o.name_any(),
            Self::ScheduledTask(o) => o.name_any(),
            Self::ScheduledTaskRun(o) => o.name_any(),
            Self::NotificationChannel(o) => o.name_any(),
            Self::NotificationDelivery(o) => o.name_any(),
            Self::Environment(o) => o.name_any(),
            Self::StorageVolume(o) => o.name_any(),
        }
    }

    /// The kind as the change feed names it.
    pub fn kind(&self) -> ChangeKind {
        match self {
            Self::Resource(_) => ChangeKind::Resource,
            Self::Deployment(_) => ChangeKind::Deployment,
            Self::Server(_) => ChangeKind::Server,
            Self::DomainBinding(_) => ChangeKind::DomainBinding,
            Self::ScheduledTask(_) => ChangeKind::ScheduledTask,
            Self::ScheduledTaskRun(_) => ChangeKind::ScheduledTaskRun,
            Self::NotificationChannel(_) => ChangeKind::NotificationChannel,
            Self::NotificationDelivery(_) => ChangeKind::NotificationDelivery,
            Self::Environment(_) => ChangeKind::Environment,
            Self::StorageVolume(_) => ChangeKind::StorageVolume,
        }
    }
}

/// One change.
#[derive(Debug, Clone)]
pub struct Change {
    pub sequence: u64,
    pub at: Timestamp,
    /// The object went (its last state is `object`).
    pub deleted: bool,
    /// Created: the first change the log saw of the object (since it went, if it did).
    pub change_type: ChangeType,
    pub object: ChangedObject,
}

/// The reader's position is older than what is kept, or from another process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap;

/// A position in the log as clients see it: `<epoch>-<sequence>`.
pub fn position(epoch: u64, sequence: u64) -> String {
    format!("{epoch}-{sequence}")
}

/// The numbered, bounded log.
pub struct ChangeLog {
    /// Distinguishes this process's positions from an earlier one's.
    pub epoch: u64,
    kept: Mutex<Kept>,
    latest: watch::Sender<u64>,
}

#[derive(Default)]
struct Kept {
    changes: VecDeque<Arc<Change>>,
    /// Every object the log saw and did not see go, by kind, namespace and name.
    known: HashSet<(ChangeKind, String, String)>,
}

impl Default for ChangeLog {
    fn default() -> Self {
        let epoch = Timestamp::now().as_millisecond().unsigned_abs();
        Self {
            epoch,
            kept: Mutex::new(Kept::default()),
            latest: watch::channel(0).0,
        }
    }
}

impl ChangeLog {
    /// Appends a change and wakes the readers.
    pub fn push(&self, deleted: bool, object: ChangedObject) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let sequence = *self.latest.borrow() + 1;
        let key = (object.kind(), object.namespace(), object.name());
        let change_type = if deleted {
            kept.known.remove(&key);
            ChangeType::Deleted
        } else if kept.known.insert(key) {
            ChangeType::Created
        } else {
            ChangeType::Updated
        };
        kept.changes.push_back(Arc::new(Change {
            sequence,
            at: Timestamp::now(),
            deleted,
            change_type,
            object,
        }));
        if kept.changes.len() > KEPT {
            kept.changes.pop_front();
        }
        self.latest.send_replace(sequence);
    }

    /// The sequence of the newest change (0: none yet).
    pub fn latest(&self) -> u64 {
        *self.latest.borrow()
    }

    /// Wakes when a change is pushed.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.latest.subscribe()
    }

    /// Every kept change after `after`, oldest first; a [`Gap`] when some of them are no
    /// longer kept.
    pub fn since(&self, after: u64) -> Result<Vec<Arc<Change>>, Gap> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let oldest = kept
            .changes
            .front()
            .map_or(self.latest() + 1, |c| c.sequence);
        if after + 1 < oldest {
            return Err(Gap);
        }
        Ok(kept
            .changes
            .iter()
            .filter(|c| c.sequence > after)
            .cloned()
            .collect())
    }

    /// A client's `<epoch>-<sequence>`: the sequence when it is of this process.
    pub fn parse_position(&self, text: &str) -> Result<u64, Gap> {
        let (epoch, sequence) = text.split_once('-').ok_or(Gap)?;
        match (epoch.parse::<u64>(), sequence.parse::<u64>()) {
            (Ok(epoch), Ok(sequence)) if epoch == self.epoch && sequence <= self.latest() => {
                Ok(sequence)
            }
            _ => Err(Gap),
        }
    }
}

/// Turns one kind's watch events into changes: applied objects as they come, and at the end
/// of a relist the objects it no longer holds as deleted (a watch that restarts reports no
/// deletes of its own). An object relisted unchanged is no change.
pub struct WatchChanges<K: kube::Resource + Clone + 'static>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    wrap: fn(Arc<K>) -> ChangedObject,
    /// The cache, which still holds the objects as before while a relist runs.
    store: Store<K>,
    /// What the cache held when the relist began, by key.
    before: Option<HashMap<(String, String), Arc<K>>>,
    /// Keys relisted so far.
    relisted: HashSet<(String, String)>,
}

fn key_of<K: kube::Resource>(object: &K) -> (String, String) {
    (object.namespace().unwrap_or_default(), object.name_any())
}

impl<K: kube::Resource + Clone + 'static> WatchChanges<K>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    pub fn new(store: Store<K>, wrap: fn(Arc<K>) -> ChangedObject) -> Self {
        Self {
            wrap,
            store,
            before: None,
            relisted: HashSet::new(),
        }
    }

    /// The changes `event` makes, as `(deleted, object)`.
    pub fn on(&mut self, event: &watcher::Event<K>) -> Vec<(bool, ChangedObject)> {
        match event {
            watcher::Event::Init => {
                let state = self.store.state().into_iter();
                self.before = Some(state.map(|o| (key_of(o.as_ref()), o)).collect());
                self.relisted.clear();
                Vec::new()
            }
            watcher::Event::InitApply(object) => {
                let key = key_of(object);
                let previous = self.before.as_ref().and_then(|b| b.get(&key));
                let unchanged =
                    previous.is_some_and(|p| p.resource_version() == object.resource_version());
                self.relisted.insert(key);
                if unchanged {
                    return Vec::new();
                }
                vec![(false, (self.wrap)(Arc::new(object.clone())))]
            }
            watcher::Event::InitDone => {
                let before = self.before.take().unwrap_or_default();
                let relisted = std::mem::take(&mut self.relisted);
                before
                    .into_iter()
                    .filter(|(key, _)| !relisted.contains(key))
                    .map(|(_, object)| (true, (self.wrap)(object)))
                    .collect()
            }
            watcher::Event::Apply(object) => {
                vec![(false, (self.wrap)(Arc::new(object.clone())))]
            }
            watcher::Event::Delete(object) => {
                vec![(true, (self.wrap)(Arc::new(object.clone())))]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::server::ServerSpec;

    fn server(name: &str, version: &str) -> Server {
        let spec: ServerSpec = serde_json::from_value(serde_json::json!({
            "host": "127.0.0.1", "username": "root", "credentialId": "key",
        }))
        .unwrap();
        let mut server = Server::new(name, spec);
        server.metadata.namespace = Some("org-a".into());
        server.metadata.resource_version = Some(version.into());
        server
    }

    #[test]
    fn positions_older_than_what_is_kept_or_of_another_process_are_gaps() {
        let log = ChangeLog::default();
        for n in 0..(KEPT + 5) {
            log.push(
                false,
                ChangedObject::Server(Arc::new(server(&format!("s{n}"), "1"))),
            );
        }
        assert_eq!(log.latest(), (KEPT + 5) as u64);
        assert!(log.since(0).is_err());
        let recent = log.since(KEPT as u64).unwrap();
        assert_eq!(
            recent.iter().map(|c| c.sequence).collect::<Vec<_>>(),
            [
                KEPT as u64 + 1,
                KEPT as u64 + 2,
                KEPT as u64 + 3,
                KEPT as u64 + 4,
                KEPT as u64 + 5
            ]
        );
        assert!(log.since(log.latest()).unwrap().is_empty());
        let mine = position(log.epoch, 3);
        assert_eq!(log.parse_position(&mine), Ok(3));
        assert_eq!(log.parse_position(&position(log.epoch + 1, 3)), Err(Gap));
        assert_eq!(log.parse_position("x"), Err(Gap));
        assert_eq!(log.parse_position(&position(log.epoch, u64::MAX)), Err(Gap));
    }

    #[test]
    fn a_relist_reports_what_went_and_skips_what_did_not_change() {
        let (reader, mut writer) = kube::runtime::reflector::store::<Server>();
        let mut changes = WatchChanges::new(reader, ChangedObject::Server);
        let events = [
            watcher::Event::Init,
            watcher::Event::InitApply(server("a", "1")),
            watcher::Event::InitApply(server("b", "1")),
            watcher::Event::InitDone,
        ];
        let mut seen = Vec::new();
        for event in &events {
            writer.apply_watcher_event(event);
            seen.extend(changes.on(event));
        }
        assert_eq!(seen.len(), 2, "the first list is all new");
        let relist = [
            watcher::Event::Init,
            watcher::Event::InitApply(server("a", "1")),
            watcher::Event::InitDone,
        ];
        let mut seen = Vec::new();
        for event in &relist {
            writer.apply_watcher_event(event);
            seen.extend(changes.on(event));
        }
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].0, "b went while the watch was down");
        assert_eq!(seen[0].1.name(), "b");
    }

    #[test]
    fn a_change_says_whether_the_object_was_created_updated_or_deleted() {
        let log = ChangeLog::default();
        let a = || ChangedObject::Server(Arc::new(server("a", "1")));
        log.push(false, a());
        log.push(false, a());
        log.push(true, a());
        log.push(false, a());
        let types: Vec<ChangeType> = log
            .since(0)
            .unwrap()
            .iter()
            .map(|c| c.change_type)
            .collect();
        assert_eq!(
            types,
            [
                ChangeType::Created,
                ChangeType::Updated,
                ChangeType::Deleted,
                ChangeType::Created
            ]
        );
    }
}
