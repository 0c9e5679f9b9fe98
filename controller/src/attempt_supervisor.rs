//! The attempt supervisor: running deployment attempts as tasks owned by the controller's
//! context, keyed by the Deployment's uid. The Deployment reconciler starts an attempt's task or
//! signals it; a cancel, a newer attempt for the same resource, or shutdown reaches a running
//! phase at once (a build of many minutes included), and SIGTERM waits for no build. An attempt
//! stopped by shutdown or a lost Lease keeps its status as it was: the next leader finds it
//! started and unfinished, and runs it again. The work itself is handed in as a future, so the
//! context holds the supervisor without depending on the reconcilers.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_crds::deployment::{AttemptOrder, Deployment};
use futures::Stream;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// How many attempts created here and not yet reconciled are remembered.
const CREATED_HERE_LIMIT: usize = 1024;

/// How long shutdown waits for stopped attempts to write what they had queued.
pub const SETTLE_ON_SHUTDOWN: Duration = Duration::from_secs(10);

/// Why a running attempt must stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// A cancel was requested on the Deployment.
    Canceled,
    /// A newer attempt (named) for the same resource started.
    Superseded(String),
    /// The Deployment was deleted.
    Deleted,
    /// The controller stops (SIGTERM, or the Lease was lost): the attempt stays unfinished.
    Shutdown,
}

/// What a running attempt listens on; `None` while it may go on.
pub type Signal = watch::Receiver<Option<Interrupt>>;

/// Identifies an attempt among those of its resource; the newest supersedes the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptKey {
    pub uid: String,
    pub namespace: String,
    pub resource: String,
    /// Exactly one attempt of a resource is newest.
    pub order: AttemptOrder,
}

impl AttemptKey {
    pub fn of(deployment: &Deployment) -> Self {
        Self {
            uid: deployment.uid().unwrap_or_else(|| deployment.name_any()),
            namespace: deployment.namespace().unwrap_or_default(),
            resource: deployment.spec.resource_id.clone(),
            order: deployment.attempt_order(),
        }
    }

    fn reference(&self) -> ObjectRef<Deployment> {
        ObjectRef::new(&self.order.2).within(&self.namespace)
    }
}

struct Running {
    key: AttemptKey,
    /// Tells a finished task's removal apart from a newer task of the same uid.
    run: u64,
    /// The attempt succeeded and retires the older containers: its own container serves.
    replacing: bool,
    signal: watch::Sender<Option<Interrupt>>,
    task: JoinHandle<()>,
}

/// The running attempts.
pub struct Attempts {
    running: Arc<Mutex<State>>,
    /// Wakes the Deployment controller for an attempt whose task ended, so the next step
    /// (a scheduled retry, the end) is decided by `reconcile` again.
    ended: mpsc::UnboundedSender<ObjectRef<Deployment>>,
    ended_stream: Mutex<Option<mpsc::UnboundedReceiver<ObjectRef<Deployment>>>>,
}

#[derive(Default)]
struct State {
    tasks: HashMap<String, Running>,
    runs: u64,
    /// Set on shutdown: no new attempt starts.
    closed: bool,
    /// Attempts this process created and has not reconciled yet (by uid): nobody else can have
    /// written their status, so the cached copy is as fresh as the API server's.
    created_here: HashSet<String>,
    /// Per resource (namespace, name), the newest attempt whose task ended after it replaced
    /// the older containers: a reconcile that read the Deployments before that attempt's
    /// success reached the cache must still look at its container, not the retired one.
    replaced: HashMap<(String, String), AttemptKey>,
}

impl Default for Attempts {
    fn default() -> Self {
        let (ended, receiver) = mpsc::unbounded_channel();
        Self {
            running: Arc::default(),
            ended,
            ended_stream: Mutex::new(Some(receiver)),
        }
    }
}

impl Attempts {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The Deployments whose attempt task ended, to reconcile again; taken once by the
    /// Deployment controller.
    pub fn ended(&self) -> impl Stream<Item = ObjectRef<Deployment>> + Send + 'static {
        let receiver = self
            .ended_stream
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        futures::stream::unfold(receiver, |receiver| async move {
            let mut receiver = receiver?;
            let next = receiver.recv().await?;
            Some((next, Some(receiver)))
        })
    }

    /// Remembers that this process created the attempt `uid` (it has not run anywhere yet).
    pub fn created_here(&self, uid: &str) {
        let mut state = self.state();
        // An attempt deleted before its first reconcile is never taken out: keep that bounded
        // (forgetting only costs a fresh read).
        if state.created_here.len() >= CREATED_HERE_LIMIT {
            state.created_here.clear();
        }
        state.created_here.insert(uid.to_string());
    }

    /// Whether this process created the attempt `uid` and this is its first reconcile; true
    /// once per attempt.
    pub fn first_reconcile_of_own(&self, uid: &str) -> bool {
        self.state().created_here.remove(uid)
    }

    /// Whether the attempt's task runs.
    pub fn is_running(&self, key: &AttemptKey) -> bool {
        self.state().tasks.contains_key(&key.uid)
    }

    /// Marks the running attempt as the one whose container serves while it retires the older
    /// ones (until its task ends): their exit is planned, not the resource failing.
    pub fn mark_replacing(&self, key: &AttemptKey) {
        if let Some(running) = self.state().tasks.get_mut(&key.uid) {
            running.replacing = true;
        }
    }

    /// The attempt of a resource whose task is retiring the older containers, or else the
    /// newest one whose task did; the caller compares it with the serving attempt it read.
    pub fn replacing(&self, namespace: &str, resource: &str) -> Option<AttemptKey> {
        let state = self.state();
        let replacing = state
            .tasks
            .values()
            .filter(|r| r.replacing && r.key.namespace == namespace && r.key.resource == resource);
        let running = replacing.max_by(|a, b| a.key.order.cmp(&b.key.order));
        let resource = (namespace.to_string(), resource.to_string());
        running
            .map(|r| r.key.clone())
            .or_else(|| state.replaced.get(&resource).cloned())
    }

    /// Tells the running attempt to stop; `false` when it does not run.
    pub fn signal(&self, key: &AttemptKey, interrupt: Interrupt) -> bool {
        let state = self.state();
        let Some(running) = state.tasks.get(&key.uid) else {
            return false;
        };
        // The first reason sticks: a canceled attempt later superseded still says canceled.
        running.signal.send_if_modified(|current| {
            if current.is_some() {
                return false;
            }
            *current = Some(interrupt);
            true
        });
        true
    }

    /// Stops the running attempts of `key`'s resource that are older than `key`.
    pub fn supersede_older(&self, key: &AttemptKey) {
        let older: Vec<AttemptKey> = self
            .state()
            .tasks
            .values()
            .filter(|r| {
                r.key.namespace == key.namespace
                    && r.key.resource == key.resource
                    && r.key.order < key.order
            })
            .map(|r| r.key.clone())
            .collect();
        for old in older {
            self.signal(&old, Interrupt::Superseded(key.order.2.clone()));
        }
    }

    /// Tells the running attempts of a resource that is being deleted to stop, and waits up to
    /// `grace` until they have: an attempt still running could start a container after the
    /// resource's cleanup removed the others. Waits by short sleeps, only while one runs.
    pub async fn stop_resource(&self, namespace: &str, resource: &str, grace: Duration) {
        let keys: Vec<AttemptKey> = self
            .state()
            .tasks
            .values()
            .filter(|r| r.key.namespace == namespace && r.key.resource == resource)
            .map(|r| r.key.clone())
            .collect();
        for key in &keys {
            self.signal(key, Interrupt::Deleted);
        }
        let deadline = tokio::time::Instant::now() + grace;
        while keys.iter().any(|key| self.is_running(key)) {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(resource, "deployment attempts did not stop in time");
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Forgotten once its attempts ended: one ending later would be remembered again.
        let gone = (namespace.to_string(), resource.to_string());
        self.state().replaced.remove(&gone);
    }

    /// Starts the attempt's task unless it runs already or the controller stops; returns
    /// whether it started. When the task ends (`after` is how long to wait first, say after a
    /// failed API call), the Deployment is reconciled again.
    pub fn start<F>(&self, key: AttemptKey, attempt: impl FnOnce(Signal) -> F) -> bool
    where
        F: Future<Output = Duration> + Send + 'static,
    {
        let mut state = self.state();
        if state.closed || state.tasks.contains_key(&key.uid) {
            return false;
        }
        state.runs += 1;
        let run = state.runs;
        let (signal, listener) = watch::channel(None);
        let work = attempt(listener);
        let ended = self.ended.clone();
        let reference = key.reference();
        let uid = key.uid.clone();
        let finished = self.finisher(uid, run);
        let task = tokio::spawn(async move {
            let after = work.await;
            finished();
            // Shutdown waits for the attempt, not for this delay.
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let _ = ended.send(reference);
            });
        });
        state.tasks.insert(
            key.uid.clone(),
            Running {
                key,
                run,
                replacing: false,
                signal,
                task,
            },
        );
        true
    }

    /// Removes a finished task's entry (unless a newer run took its place).
    fn finisher(&self, uid: String, run: u64) -> impl FnOnce() + Send + 'static {
        let running = Arc::clone(&self.running);
        move || {
            let mut state = running.lock().unwrap_or_else(|p| p.into_inner());
            if state.tasks.get(&uid).is_some_and(|r| r.run == run)
                && let Some(ended) = state.tasks.remove(&uid)
                && ended.replacing
            {
                remember_replaced(&mut state.replaced, ended.key);
            }
        }
    }

    /// Stops every running attempt (they keep their status, unfinished) and waits up to
    /// `grace` for them to write what they had queued; those still running then are aborted.
    /// No attempt starts afterwards.
    pub async fn shut_down(&self, grace: Duration) {
        let tasks: Vec<Running> = {
            let mut state = self.state();
            state.closed = true;
            state.tasks.drain().map(|(_, running)| running).collect()
        };
        if tasks.is_empty() {
            return;
        }
        tracing::info!(
            attempts = tasks.len(),
            "stopping the running deployment attempts"
        );
        let mut handles = Vec::new();
        for running in tasks {
            running.signal.send_replace(Some(Interrupt::Shutdown));
            handles.push(running.task);
        }
        let aborts: Vec<_> = handles.iter().map(JoinHandle::abort_handle).collect();
        let all = futures::future::join_all(handles);
        if tokio::time::timeout(grace, all).await.is_err() {
            tracing::warn!("deployment attempts did not stop in time; aborted");
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
        }
    }
}

/// Keeps `ended` as its resource's last replacing attempt unless a newer one is kept already.
fn remember_replaced(replaced: &mut HashMap<(String, String), AttemptKey>, ended: AttemptKey) {
    let resource = (ended.namespace.clone(), ended.resource.clone());
    if replaced
        .get(&resource)
        .is_none_or(|kept| kept.order < ended.order)
    {
        replaced.insert(resource, ended);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that waits for its signal and reports what it got.
    fn waiting_task(
        seen: tokio::sync::mpsc::UnboundedSender<Interrupt>,
    ) -> impl FnOnce(Signal) -> std::pin::Pin<Box<dyn Future<Output = Duration> + Send>> {
        move |mut signal: Signal| {
            Box::pin(async move {
                let interrupt = signal.wait_for(Option::is_some).await.unwrap().clone();
                let _ = seen.send(interrupt.unwrap());
                Duration::ZERO
            })
        }
    }

    fn key(name: &str, resource: &str, second: i64) -> AttemptKey {
        AttemptKey {
            uid: format!("uid-{name}"),
            namespace: "org-acme".into(),
            resource: resource.into(),
            order: (
                Some(k8s_openapi::jiff::Timestamp::from_second(second).unwrap()),
                None,
                name.into(),
            ),
        }
    }

    #[test]
    fn only_the_first_reconcile_of_an_attempt_created_here_may_trust_the_cache() {
        let attempts = Attempts::default();
        attempts.created_here("uid-new");
        assert!(attempts.first_reconcile_of_own("uid-new"));
        assert!(
            !attempts.first_reconcile_of_own("uid-new"),
            "a second reconcile reads the attempt again"
        );
        assert!(
            !attempts.first_reconcile_of_own("uid-elsewhere"),
            "created by another process (or a previous leader)"
        );
    }

    #[test]
    fn attempts_created_here_and_never_reconciled_stay_bounded() {
        let attempts = Attempts::default();
        for n in 0..=CREATED_HERE_LIMIT {
            attempts.created_here(&format!("uid-{n}"));
        }
        assert!(attempts.state().created_here.len() <= CREATED_HERE_LIMIT);
        assert!(attempts.first_reconcile_of_own(&format!("uid-{CREATED_HERE_LIMIT}")));
    }

    #[tokio::test]
    async fn a_replacing_attempt_is_named_for_its_resource_until_its_task_ends() {
        let attempts = Attempts::default();
        let (seen, _heard) = tokio::sync::mpsc::unbounded_channel();
        let (web, api) = (key("dep-web-2", "web", 2), key("dep-api-1", "api", 1));
        assert!(attempts.start(web.clone(), waiting_task(seen.clone())));
        assert!(attempts.start(api.clone(), waiting_task(seen)));
        assert_eq!(
            attempts.replacing("org-acme", "web"),
            None,
            "not yet verified"
        );
        attempts.mark_replacing(&web);
        assert_eq!(attempts.replacing("org-acme", "web"), Some(web.clone()));
        assert_eq!(attempts.replacing("org-acme", "api"), None);
        attempts
            .stop_resource("org-acme", "web", Duration::from_secs(5))
            .await;
        assert_eq!(
            attempts.replacing("org-acme", "web"),
            None,
            "its resource is being deleted"
        );
        attempts.shut_down(Duration::from_secs(1)).await;
    }

    #[tokio::test]
    async fn an_attempt_that_replaced_the_older_containers_is_remembered_after_its_task() {
        let attempts = Attempts::default();
        let (web2, web3) = (key("dep-web-2", "web", 2), key("dep-web-3", "web", 3));
        let done = |_signal: Signal| async { Duration::ZERO };
        assert!(attempts.start(web3.clone(), |_signal: Signal| async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Duration::ZERO
        }));
        attempts.mark_replacing(&web3);
        while attempts.is_running(&web3) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(attempts.replacing("org-acme", "web"), Some(web3.clone()));
        // An older attempt ending later does not take its place.
        remember_replaced(&mut attempts.state().replaced, web2);
        assert_eq!(attempts.replacing("org-acme", "web"), Some(web3));
        // One that never replaced anything (it failed) is not remembered.
        let api = key("dep-api-1", "api", 1);
        assert!(attempts.start(api.clone(), done));
        while attempts.is_running(&api) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(attempts.replacing("org-acme", "api"), None);
        attempts.shut_down(Duration::from_secs(1)).await;
    }

    #[tokio::test]
    async fn a_deleted_resource_s_attempts_stop_before_its_cleanup_goes_on() {
        let attempts = Attempts::default();
        let (seen, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let (web, api) = (key("dep-web-1", "web", 1), key("dep-api-1", "api", 1));
        assert!(attempts.start(web.clone(), waiting_task(seen.clone())));
        assert!(attempts.start(api.clone(), waiting_task(seen)));
        attempts
            .stop_resource("org-acme", "web", Duration::from_secs(5))
            .await;
        assert!(
            !attempts.is_running(&web),
            "stopped before the call returned"
        );
        assert_eq!(heard.recv().await, Some(Interrupt::Deleted));
        assert!(
            attempts.is_running(&api),
            "another resource's attempt goes on"
        );
        attempts.shut_down(Duration::from_secs(1)).await;
    }

    #[tokio::test]
    async fn the_supervisor_signals_running_attempts_and_stops_them_on_shutdown() {
        use futures::StreamExt;
        let attempts = Attempts::default();
        let mut ended = Box::pin(attempts.ended());
        let (seen, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let (old, new, other) = (
            key("dep-web-1", "web", 1),
            key("dep-web-2", "web", 2),
            key("dep-api-1", "api", 1),
        );
        assert!(attempts.start(old.clone(), waiting_task(seen.clone())));
        assert!(
            !attempts.start(old.clone(), waiting_task(seen.clone())),
            "one task per uid"
        );
        assert!(attempts.start(other.clone(), waiting_task(seen.clone())));

        // A newer attempt of the same resource stops the older one, and only that one.
        attempts.supersede_older(&new);
        let got = tokio::time::timeout(Duration::from_secs(1), heard.recv()).await;
        assert_eq!(
            got.unwrap(),
            Some(Interrupt::Superseded("dep-web-2".into()))
        );
        let reconciled = tokio::time::timeout(Duration::from_secs(1), ended.next()).await;
        assert_eq!(reconciled.unwrap().unwrap().name, "dep-web-1");
        assert!(!attempts.is_running(&old));
        assert!(attempts.is_running(&other));

        // Shutdown reaches the rest and waits for them; nothing starts afterwards.
        attempts.shut_down(Duration::from_secs(1)).await;
        assert_eq!(heard.recv().await, Some(Interrupt::Shutdown));
        assert!(!attempts.is_running(&other));
        assert!(!attempts.start(new, waiting_task(seen)));
    }
}
