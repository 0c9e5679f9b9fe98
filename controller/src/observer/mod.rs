//! One observer per server (DESIGN §5a): a task holds a Docker events subscription open through
//! the server's SSH connection, keeps an index of Berth's containers there, and wakes the
//! reconcilers of what changed. Drift repair reads the index instead of probing each container;
//! health, logs and monitoring read it too.
//!
//! This module is what the context holds and the reconcilers read: which observers run, what
//! each knows, and whom they wake. The tasks themselves are [`crate::observer_tasks`]: they need
//! the whole context, which this module does not know.

pub mod index;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use berth_crds::resource::Resource;
use berth_crds::server::Server;
use futures::channel::mpsc;
use kube::runtime::reflector::ObjectRef;

use self::index::{Changes, ContainerEvent, Listed};
pub use self::index::{ContainerRecord, ServerIndex};
use berth_remote::ServerId;

/// How often an observer's monitoring collector samples its server (how long samples are kept
/// is the `runtime-monitoring-samples` RetentionPolicy's).
#[derive(Clone, Copy, Debug)]
pub struct MonitoringSettings {
    pub interval: Duration,
}

/// How far an observer got with its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connectivity {
    /// Not connected yet since this process started: nothing is known either way.
    Starting,
    /// Subscribed to the server's events; the index is current.
    Live,
    /// The subscription broke; the index shows the last known state.
    Lost,
}

/// What one observer knows, shared between its task and the readers. Only the observer's task
/// writes it (the methods marked so).
pub struct ObservedServer {
    index: RwLock<ServerIndex>,
    connectivity: Mutex<Connectivity>,
    /// Increases on every (re)subscription and proxy start: the edge proxy's routes may have
    /// changed since a route was last confirmed at a lower epoch.
    epoch: Mutex<u64>,
    /// The epoch at which each resource's route was last confirmed on the proxy.
    routes_confirmed: Mutex<HashMap<(String, String), u64>>,
    /// Told on every epoch: the access-log follower reconnects to a (re)started proxy at once.
    proxy_restarted: tokio::sync::Notify,
    /// Per container, the deaths crash evidence was taken for.
    deaths_taken: Mutex<HashMap<String, u64>>,
}

/// A container's stop that no crash evidence was taken for yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Death {
    pub exit_code: Option<i64>,
    pub oom_killed: bool,
}

impl ObservedServer {
    fn new() -> Self {
        Self {
            index: RwLock::default(),
            connectivity: Mutex::new(Connectivity::Starting),
            epoch: Mutex::new(0),
            routes_confirmed: Mutex::default(),
            deaths_taken: Mutex::default(),
            proxy_restarted: tokio::sync::Notify::new(),
        }
    }

    pub fn connectivity(&self) -> Connectivity {
        *lock(&self.connectivity)
    }

    /// Sets the connectivity; returns whether it changed. The observer's task only.
    pub fn set_connectivity(&self, now: Connectivity) -> bool {
        let mut current = lock(&self.connectivity);
        let changed = *current != now;
        *current = now;
        changed
    }

    /// The container named `name`, as last observed.
    pub fn container(&self, name: &str) -> Option<ContainerRecord> {
        read(&self.index).container(name).cloned()
    }

    /// Every managed container of one resource, as last observed.
    pub fn containers_of(&self, namespace: &str, resource: &str) -> Vec<ContainerRecord> {
        read(&self.index)
            .containers()
            .filter(|c| {
                c.owner
                    .as_ref()
                    .is_some_and(|o| o.namespace == namespace && o.resource == resource)
            })
            .cloned()
            .collect()
    }

    /// Every running application container (one with an owner), as last observed.
    pub fn running_applications(&self) -> Vec<ContainerRecord> {
        read(&self.index)
            .containers()
            .filter(|c| c.running && c.owner.is_some())
            .cloned()
            .collect()
    }

    /// The last stop of container `name` if no evidence was taken for it yet; it counts as
    /// taken from now on, so one crash is recorded once.
    pub fn take_death(&self, name: &str) -> Option<Death> {
        let record = self.container(name)?;
        let mut taken = lock(&self.deaths_taken);
        if taken.len() > 64 {
            // Containers come and go with deployments: forget the ones gone.
            let index = read(&self.index);
            taken.retain(|container, _| index.container(container).is_some());
        }
        let seen = taken.entry(name.to_string()).or_insert(0);
        if record.deaths <= *seen {
            return None;
        }
        *seen = record.deaths;
        Some(Death {
            exit_code: record.exit_code,
            oom_killed: record.died_oom,
        })
    }

    /// Replaces the index with a full listing. The observer's task only.
    pub fn replace(&self, listed: Vec<Listed>) -> Changes {
        write(&self.index).replace(listed)
    }

    /// Applies one Docker event to the index. The observer's task only.
    pub fn apply(&self, event: &ContainerEvent) -> Changes {
        write(&self.index).apply(event)
    }

    /// Starts a new epoch: the server was (re)subscribed to, or its proxy (re)started. The
    /// observer's task only.
    pub fn bump_epoch(&self) {
        *lock(&self.epoch) += 1;
        self.proxy_restarted.notify_one();
    }

    /// Resolves at the next epoch (at once if one began while nobody waited): the access-log
    /// follower reconnects to a (re)started proxy.
    pub async fn proxy_restarted(&self) {
        self.proxy_restarted.notified().await;
    }

    /// The epoch a route check should record, or `None` when the resource's route was already
    /// confirmed since the proxy last (re)started.
    pub fn route_check_due(&self, namespace: &str, resource: &str) -> Option<u64> {
        let epoch = *lock(&self.epoch);
        let key = (namespace.to_string(), resource.to_string());
        let confirmed = lock(&self.routes_confirmed).get(&key).copied();
        (confirmed != Some(epoch)).then_some(epoch)
    }

    pub fn confirm_route(&self, namespace: &str, resource: &str, epoch: u64) {
        let key = (namespace.to_string(), resource.to_string());
        lock(&self.routes_confirmed).insert(key, epoch);
    }

    /// Forgets a route confirmation (the route changed, or the resource went away).
    pub fn forget_route(&self, namespace: &str, resource: &str) {
        lock(&self.routes_confirmed).remove(&(namespace.to_string(), resource.to_string()));
    }
}

/// Reconcilers an observer wakes; their receiving ends feed the controllers.
#[derive(Clone)]
pub struct Wakers {
    resources: mpsc::UnboundedSender<ObjectRef<Resource>>,
    servers: mpsc::UnboundedSender<ObjectRef<Server>>,
    dependencies: mpsc::UnboundedSender<DependencyWake>,
}

/// Which managed dependencies to look at: one whose container changed, or every one on a
/// server whose observer connected or lost its events (the Dependency controller knows which
/// those are).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DependencyWake {
    One { namespace: String, name: String },
    OnServer(ServerId),
}

/// The receiving ends of [`Wakers`], one per controller.
pub struct WakeReceivers {
    pub resources: mpsc::UnboundedReceiver<ObjectRef<Resource>>,
    pub servers: mpsc::UnboundedReceiver<ObjectRef<Server>>,
    pub dependencies: mpsc::UnboundedReceiver<DependencyWake>,
}

impl Wakers {
    pub fn resource(&self, namespace: &str, name: &str) {
        let _ = self
            .resources
            .unbounded_send(ObjectRef::new(name).within(namespace));
    }

    pub fn server(&self, id: &ServerId) {
        let _ = self
            .servers
            .unbounded_send(ObjectRef::new(&id.name).within(&id.namespace));
    }

    pub fn dependency(&self, namespace: &str, name: &str) {
        let _ = self.dependencies.unbounded_send(DependencyWake::One {
            namespace: namespace.to_string(),
            name: name.to_string(),
        });
    }

    pub fn dependencies_on(&self, id: &ServerId) {
        let _ = self
            .dependencies
            .unbounded_send(DependencyWake::OnServer(id.clone()));
    }
}

/// Every server's observer, started by the Server reconciler once the server answers.
pub struct Observers {
    running: Mutex<HashMap<ServerId, Running>>,
    pub wake: Wakers,
    monitoring: MonitoringSettings,
}

struct Running {
    observed: Arc<ObservedServer>,
    task: tokio::task::AbortHandle,
}

impl Observers {
    pub fn new(monitoring: MonitoringSettings) -> (Self, WakeReceivers) {
        let (resources, resources_rx) = mpsc::unbounded();
        let (servers, servers_rx) = mpsc::unbounded();
        let (dependencies, dependencies_rx) = mpsc::unbounded();
        let observers = Self {
            running: Mutex::default(),
            wake: Wakers {
                resources,
                servers,
                dependencies,
            },
            monitoring,
        };
        let receivers = WakeReceivers {
            resources: resources_rx,
            servers: servers_rx,
            dependencies: dependencies_rx,
        };
        (observers, receivers)
    }

    /// How often the observers sample their servers.
    pub fn monitoring(&self) -> MonitoringSettings {
        self.monitoring
    }

    /// Starts the server's observer unless it runs: `observe` is handed what the observer
    /// knows and returns its task ([`crate::observer_tasks::start`] says which).
    pub fn ensure<F>(&self, id: &ServerId, observe: impl FnOnce(Arc<ObservedServer>) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut running = lock(&self.running);
        if running.get(id).is_some_and(|r| !r.task.is_finished()) {
            return;
        }
        let observed = Arc::new(ObservedServer::new());
        let task = tokio::spawn(observe(Arc::clone(&observed)));
        tracing::info!(server = %id, "observing the server's containers");
        running.insert(
            id.clone(),
            Running {
                observed,
                task: task.abort_handle(),
            },
        );
    }

    /// Stops the server's observer (the server is being deleted).
    pub fn stop(&self, id: &ServerId) {
        if let Some(running) = lock(&self.running).remove(id) {
            running.task.abort();
        }
    }

    /// What the server's observer knows; `None` before it started.
    pub fn get(&self, id: &ServerId) -> Option<Arc<ObservedServer>> {
        lock(&self.running)
            .get(id)
            .map(|running| Arc::clone(&running.observed))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every update leaves the data consistent; a panicked holder does not poison it for us.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(index: &RwLock<ServerIndex>) -> std::sync::RwLockReadGuard<'_, ServerIndex> {
    index.read().unwrap_or_else(|e| e.into_inner())
}

fn write(index: &RwLock<ServerIndex>) -> std::sync::RwLockWriteGuard<'_, ServerIndex> {
    index.write().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
impl Observers {
    /// A live observer of `id` whose index lists `containers`, as a healthy server's observer
    /// settles; nothing runs behind it (no SSH).
    pub fn observe_for_test(
        &self,
        id: &ServerId,
        containers: Vec<index::Listed>,
    ) -> Arc<ObservedServer> {
        let observed = Arc::new(ObservedServer::new());
        observed.replace(containers);
        observed.set_connectivity(Connectivity::Live);
        let task = tokio::spawn(async {}).abort_handle();
        let running = Running {
            observed: Arc::clone(&observed),
            task,
        };
        lock(&self.running).insert(id.clone(), running);
        observed
    }
}
