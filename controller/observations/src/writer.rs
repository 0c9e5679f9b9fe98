//! The controller's handle on the observation store. It records timeline entries without
//! holding an attempt up: entries queue to one thread that stores them in batches, in order;
//! `flush` waits until everything queued before it is stored. Health observations are stored
//! off the async threads, and the store itself is at hand for what needs no queue.

use std::sync::Arc;

use berth_crds::progress::ProgressEvent;
use tokio::sync::{mpsc, oneshot};

use super::{ControllerStore, HealthObservation, TimelineKey, TimelineStore};

/// Entries taken from the queue into one batch at most.
const BATCH: usize = 512;

enum Command {
    Record(TimelineKey, ProgressEvent),
    Flush(oneshot::Sender<()>),
}

/// A cheap, cloneable handle to the writer thread; the default one records nothing.
#[derive(Clone, Default)]
pub struct ObservationWriter {
    queue: Option<mpsc::UnboundedSender<Command>>,
    store: Option<Arc<dyn ControllerStore>>,
}

impl ObservationWriter {
    /// Starts the writer thread over `store`. It ends when the last handle is dropped.
    pub fn start(store: Arc<dyn ControllerStore>) -> std::io::Result<Self> {
        let (queue, commands) = mpsc::unbounded_channel();
        let written = Arc::clone(&store);
        std::thread::Builder::new()
            .name("berth-observations".into())
            .spawn(move || write_batches(written.as_ref(), commands))?;
        Ok(Self {
            queue: Some(queue),
            store: Some(store),
        })
    }

    /// The attempts of one resource whose timelines are stored (none without a store).
    pub async fn attempts(&self, namespace: &str, resource: &str) -> Result<Vec<String>, String> {
        let Some(store) = self.store.clone() else {
            return Ok(Vec::new());
        };
        let (namespace, resource) = (namespace.to_string(), resource.to_string());
        tokio::task::spawn_blocking(move || store.attempts(&namespace, &resource))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }

    /// Stores health observations off the async threads; a failure is logged, not returned:
    /// the history misses an observation, nothing else waits on it.
    pub async fn record_health(&self, observations: Vec<HealthObservation>) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let count = observations.len();
        let stored = tokio::task::spawn_blocking(move || store.record_health(&observations)).await;
        match stored {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, lost = count, "could not record health"),
            Err(error) => tracing::warn!(%error, lost = count, "health recording stopped"),
        }
    }

    /// The store itself, for records that need no queue (none without a store).
    pub fn store(&self) -> Option<Arc<dyn ControllerStore>> {
        self.store.clone()
    }

    /// Queues `event` for `key`'s timeline. The text must already be masked.
    pub fn record(&self, key: &TimelineKey, event: ProgressEvent) {
        if let Some(queue) = &self.queue {
            let _ = queue.send(Command::Record(key.clone(), event));
        }
    }

    /// Waits until every entry queued before this call is stored (or failed to be).
    pub async fn flush(&self) {
        let Some(queue) = &self.queue else { return };
        let (done, stored) = oneshot::channel();
        if queue.send(Command::Flush(done)).is_ok() {
            let _ = stored.await;
        }
    }
}

/// The writer thread: takes what is queued, stores consecutive entries of one attempt in one
/// transaction, then answers the flushes that were waiting behind them.
fn write_batches(store: &dyn TimelineStore, mut commands: mpsc::UnboundedReceiver<Command>) {
    while let Some(first) = commands.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match commands.try_recv() {
                Ok(command) => batch.push(command),
                Err(_) => break,
            }
        }
        let mut run: Option<(TimelineKey, Vec<ProgressEvent>)> = None;
        let mut flushed = Vec::new();
        for command in batch {
            match command {
                Command::Record(key, event) => match &mut run {
                    Some((current, events)) if *current == key => events.push(event),
                    _ => {
                        if let Some((key, events)) = run.replace((key, vec![event])) {
                            store_run(store, &key, &events);
                        }
                    }
                },
                Command::Flush(done) => flushed.push(done),
            }
        }
        if let Some((key, events)) = run {
            store_run(store, &key, &events);
        }
        for done in flushed {
            let _ = done.send(());
        }
    }
}

fn store_run(store: &dyn TimelineStore, key: &TimelineKey, events: &[ProgressEvent]) {
    if let Err(error) = store.append(key, events) {
        tracing::warn!(
            %error,
            deployment = %key.deployment,
            namespace = %key.namespace,
            lost = events.len(),
            "could not record timeline entries"
        );
    }
}
