//! Terminal sessions past their wait, in the observation store every shim replica shares:
//! taken by their WebSocket (`active` while the replica bridging them renews their lease),
//! `closing`, or `closed` (kept [`CLOSED_KEPT`](super::CLOSED_KEPT), so that closing one again
//! answers the same).
//! The store keeps what the pending session held, as it was.

use std::sync::Arc;

use berth_observations::{OpenedTerminal, ShimStore, TerminalState};

use super::pending::{self, Pending};
use super::{TerminalSessionStatus, lease_from};
use crate::error::{ApiError, ApiResult};
use crate::observation_store::store_call;

/// What `store_call` names when the store fails.
const WHAT: &str = "terminal sessions";

/// A session past its wait.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// What it was created as; its `listed.status` follows `state`.
    pub pending: Pending,
    pub state: TerminalState,
    /// Until when its replica vouches for it, in Unix milliseconds.
    pub lease_ms: i64,
}

impl Opened {
    /// Whether its shell may still run: not closed, and its replica renews its lease.
    pub fn running_at(&self, now_ms: i64) -> bool {
        self.state != TerminalState::Closed && self.lease_ms > now_ms
    }
}

/// A stored record back into the session it holds.
fn opened(record: &OpenedTerminal) -> Result<Opened, serde_json::Error> {
    let mut pending = pending::from_detail(&record.id, &record.detail)?;
    pending.listed.status = match record.state {
        TerminalState::Active => TerminalSessionStatus::Active,
        TerminalState::Closing | TerminalState::Closed => TerminalSessionStatus::Closing,
    };
    Ok(Opened {
        pending,
        state: record.state,
        lease_ms: record.lease_ms,
    })
}

/// The user's sessions whose shells may still run, on any replica, newest first.
pub async fn of_user(store: &Arc<dyn ShimStore>, user_id: &str) -> ApiResult<Vec<Opened>> {
    let user = user_id.to_string();
    let now = berth_observations::now_ms();
    let records = store_call(store, WHAT, move |store| store.opened_terminals(&user, now)).await?;
    Ok(records
        .iter()
        .filter_map(|record| match opened(record) {
            Ok(opened) => Some(opened),
            // A detail this shim cannot read (a newer replica's): listed by the one that can.
            Err(error) => {
                tracing::warn!(session = %record.id, %error, "an opened terminal session could not be read");
                None
            }
        })
        .collect())
}

/// The user's session `id` past its wait, whatever its state.
pub async fn find(
    store: &Arc<dyn ShimStore>,
    id: &str,
    user_id: &str,
) -> ApiResult<Option<Opened>> {
    let (id, user) = (id.to_string(), user_id.to_string());
    let record = store_call(store, WHAT, move |store| store.opened_terminal(&id, &user)).await?;
    record
        .as_ref()
        .map(opened)
        .transpose()
        .map_err(ApiError::internal)
}

/// Renews session `id`'s lease from now; its state, or `None` once it is closed or gone.
pub async fn renew(store: &Arc<dyn ShimStore>, id: &str) -> ApiResult<Option<TerminalState>> {
    let id = id.to_string();
    let lease = lease_from(berth_observations::now_ms());
    store_call(store, WHAT, move |store| store.renew_terminal(&id, lease)).await
}

/// Moves session `id` forward to `state`; whether it moved.
pub async fn advance(
    store: &Arc<dyn ShimStore>,
    id: &str,
    state: TerminalState,
) -> ApiResult<bool> {
    let id = id.to_string();
    let now = berth_observations::now_ms();
    store_call(store, WHAT, move |store| {
        store.advance_terminal(&id, state, now)
    })
    .await
}
