//! A session this replica bridges to its shell. While it runs, its lease in the store is
//! renewed every [`RENEW_EVERY`], and a close asked for on any replica reaches the bridge: at
//! once when asked here ([`Terminals::close_here`]), at the next renewal when asked elsewhere
//! (the store then says `closing`). However the session ends, even before its shell started,
//! it is recorded closed.

use std::sync::Arc;

use berth_observations::{ShimStore, TerminalState};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{RENEW_EVERY, Terminals, opened};

/// A session bridged here; dropping it records the session closed.
pub struct Bridged {
    terminals: Arc<Terminals>,
    store: Arc<dyn ShimStore>,
    id: String,
    asked: watch::Receiver<bool>,
    keeper: JoinHandle<()>,
}

impl Terminals {
    /// Starts bridging session `id`, which its WebSocket has just taken.
    pub fn bridge(self: &Arc<Self>, store: &Arc<dyn ShimStore>, id: &str) -> Bridged {
        let (ask, asked) = watch::channel(false);
        let mut bridged = self.bridged.lock().unwrap_or_else(|e| e.into_inner());
        bridged.insert(id.to_string(), ask);
        drop(bridged);
        let keeper = tokio::spawn(keep(self.clone(), store.clone(), id.to_string()));
        Bridged {
            terminals: self.clone(),
            store: store.clone(),
            id: id.to_string(),
            asked,
            keeper,
        }
    }
}

impl Bridged {
    /// Resolves once a close of the session has been asked for.
    pub fn close_asked(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut asked = self.asked.clone();
        async move {
            // The sender lives as long as `self`: a closed channel means no one can ask.
            if asked.wait_for(|asked| *asked).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Notes that the session is ending (its shell ended, its client left, it idled out or it
    /// was asked to close): listed `closing` until it is closed.
    pub fn closing(&self) {
        let (store, id) = (self.store.clone(), self.id.clone());
        tokio::spawn(async move {
            let _ = opened::advance(&store, &id, TerminalState::Closing).await;
        });
    }
}

impl Drop for Bridged {
    fn drop(&mut self) {
        self.keeper.abort();
        let mut bridged = self
            .terminals
            .bridged
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        bridged.remove(&self.id);
        drop(bridged);
        let (store, id) = (self.store.clone(), self.id.clone());
        tokio::spawn(async move {
            if opened::advance(&store, &id, TerminalState::Closed)
                .await
                .is_err()
            {
                // Its lease lapses instead: then it is closed for every replica all the same.
                tracing::warn!(session = %id, "a closed terminal session could not be recorded closed");
            }
        });
    }
}

/// Renews the session's lease until it is asked to close (or is closed), then asks the bridge.
/// A store that fails a renewal is tried again at the next one; meanwhile the lease may lapse.
async fn keep(terminals: Arc<Terminals>, store: Arc<dyn ShimStore>, id: String) {
    let mut every = tokio::time::interval(RENEW_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is at once; taking the session set its first lease.
    every.tick().await;
    loop {
        every.tick().await;
        match opened::renew(&store, &id).await {
            Ok(Some(TerminalState::Active)) | Err(_) => {}
            Ok(Some(TerminalState::Closing | TerminalState::Closed) | None) => {
                terminals.close_here(&id);
                return;
            }
        }
    }
}
