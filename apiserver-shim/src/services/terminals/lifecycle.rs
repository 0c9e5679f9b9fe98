//! Appaloft's terminal-session lifecycle: list (with its filters), show and close one of the
//! caller's sessions, whichever replica created or bridges it. A session is its creator's, in
//! the organization it was created in: anyone else is told it does not exist.
//!
//! Closing a waiting session removes it (its WebSocket can no longer take it); closing a
//! connected one asks the replica that bridges it to end its shell, and waits until that
//! replica says it has (or stopped renewing the session: then it is gone with that replica).
//! A closed session answers a second close as the first.

use std::sync::Arc;
use std::time::Duration;

use berth_api::terminal::TerminalSessionFilters;
use berth_observations::{ShimStore, TerminalState};
use k8s_openapi::jiff::Timestamp;

use super::opened::{self, Opened};
use super::pending::{self, Pending};
use super::{ListedSession, RENEW_EVERY, Terminals};
use crate::error::{ApiError, ApiResult};

/// Sessions a list answers without `limit`.
pub const DEFAULT_LIMIT: usize = 50;
/// How long a close waits for the replica bridging the session: a few renewals.
pub const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// How often a close waiting for another replica looks again.
const CLOSE_POLL: Duration = Duration::from_millis(200);

/// Whose sessions: a user's, in the organization they are acting in.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub user_id: &'a str,
    /// The organization's namespace; `None` for a user in no organization, who has none.
    pub namespace: Option<&'a str>,
}

impl Owner<'_> {
    fn owns(&self, pending: &Pending) -> bool {
        self.namespace == Some(pending.namespace.as_str())
    }
}

/// One of a user's sessions, as the store knows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// Waiting for its WebSocket.
    Pending(Pending),
    /// Taken by its WebSocket: running, closing or closed.
    Opened(Opened),
}

/// Whether `session` passes every filter given.
pub fn matches(filters: &TerminalSessionFilters, session: &ListedSession) -> bool {
    let same = |wanted: &Option<String>, value: &Option<String>| {
        wanted.is_none() || wanted.as_deref() == value.as_deref()
    };
    filters
        .scope
        .is_none_or(|scope| scope.as_str() == session.scope)
        && filters
            .server_id
            .as_ref()
            .is_none_or(|server| *server == session.server_id)
        && same(&filters.resource_id, &session.resource_id)
        && same(&filters.deployment_id, &session.deployment_id)
        // Berth opens no sandbox terminals: a sandbox filter matches none.
        && filters.sandbox_id.is_none()
}

/// The owner's sessions among `sessions` (opened, then waiting, of every organization of the
/// user) that pass `filters`, newest first, at most `limit` of them. A session in both (taken
/// between the two looks) is listed once, as opened.
pub fn select(
    owner: &Owner<'_>,
    sessions: Vec<Pending>,
    filters: &TerminalSessionFilters,
) -> Vec<ListedSession> {
    let mut listed: Vec<ListedSession> = sessions
        .into_iter()
        .filter(|session| owner.owns(session))
        .map(|session| session.listed)
        .filter(|listed| matches(filters, listed))
        .collect();
    // By time, not text (fractions of a second are printed without trailing zeros); stable,
    // so of a session in both, the opened one stays first.
    listed.sort_by_cached_key(|s| {
        let created = s.created_at.parse::<Timestamp>().ok();
        std::cmp::Reverse((created, s.session_id.clone()))
    });
    listed.dedup_by(|later, earlier| later.session_id == earlier.session_id);
    let limit = filters.limit.map_or(DEFAULT_LIMIT, |limit| limit as usize);
    listed.truncate(limit);
    listed
}

/// What `GET /terminal-sessions/{sessionId}` shows of `found` at `now_ms`: a waiting session,
/// or one whose shell may still run; nothing of a closed one, nor of another organization's.
pub fn shown(owner: &Owner<'_>, found: Option<Found>, now_ms: i64) -> Option<ListedSession> {
    match found? {
        Found::Pending(pending) => owner.owns(&pending).then_some(pending.listed),
        Found::Opened(opened) => (owner.owns(&opened.pending) && opened.running_at(now_ms))
            .then_some(opened.pending.listed),
    }
}

/// What closing `found` takes, at `now_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseStep {
    /// None of the owner's: 404.
    NotFound,
    /// Closed already: answered as the first close was.
    AlreadyClosed,
    /// Waiting for its WebSocket: removed, recorded closed.
    ClosePending,
    /// Its replica stopped renewing it (that replica is gone, and its shell with it):
    /// recorded closed.
    RecordClosed,
    /// Bridged by a replica that renews it: ask that replica, and wait.
    AskBridge,
}

pub fn close_step(owner: &Owner<'_>, found: Option<&Found>, now_ms: i64) -> CloseStep {
    match found {
        Some(Found::Pending(pending)) if owner.owns(pending) => CloseStep::ClosePending,
        Some(Found::Opened(opened)) if owner.owns(&opened.pending) => {
            if opened.state == TerminalState::Closed {
                CloseStep::AlreadyClosed
            } else if opened.running_at(now_ms) {
                CloseStep::AskBridge
            } else {
                CloseStep::RecordClosed
            }
        }
        _ => CloseStep::NotFound,
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("terminal session", id)
}

/// The owner's session `id`, waiting or opened. Waiting first: taking a session moves it to
/// the opened ones in one transaction, never back, so a take between the two looks is seen.
async fn find(store: &Arc<dyn ShimStore>, owner: &Owner<'_>, id: &str) -> ApiResult<Option<Found>> {
    if let Some(pending) = pending::find(store, id, owner.user_id).await? {
        return Ok(Some(Found::Pending(pending)));
    }
    Ok(opened::find(store, id, owner.user_id)
        .await?
        .map(Found::Opened))
}

/// `GET /terminal-sessions`: the owner's sessions passing `filters`, from every replica.
pub async fn list(
    store: &Arc<dyn ShimStore>,
    owner: &Owner<'_>,
    filters: &TerminalSessionFilters,
) -> ApiResult<Vec<ListedSession>> {
    // Waiting first (see `find`): a session taken in between is then seen twice, never missed.
    let waiting = pending::of_user(store, owner.user_id).await?;
    let opened = opened::of_user(store, owner.user_id).await?;
    let sessions = opened
        .into_iter()
        .map(|opened| opened.pending)
        .chain(waiting)
        .collect();
    Ok(select(owner, sessions, filters))
}

/// `GET /terminal-sessions/{sessionId}`: the owner's session `id`; 404 when it is not one of
/// theirs, or closed.
pub async fn show(
    store: &Arc<dyn ShimStore>,
    owner: &Owner<'_>,
    id: &str,
) -> ApiResult<ListedSession> {
    let found = find(store, owner, id).await?;
    shown(owner, found, berth_observations::now_ms()).ok_or_else(|| not_found(id))
}

/// `POST /terminal-sessions/{sessionId}/close`: closes the owner's session `id` wherever it
/// is; succeeds again for a session closed before, 404 for one that is not theirs.
pub async fn close(
    store: &Arc<dyn ShimStore>,
    terminals: &Terminals,
    owner: &Owner<'_>,
    id: &str,
) -> ApiResult<()> {
    // A waiting session may be taken by its WebSocket between the look and the close: then it
    // is opened, and the next round closes it as such.
    for _ in 0..3 {
        let found = find(store, owner, id).await?;
        match close_step(owner, found.as_ref(), berth_observations::now_ms()) {
            CloseStep::NotFound => return Err(not_found(id)),
            CloseStep::AlreadyClosed => return Ok(()),
            CloseStep::ClosePending => {
                if pending::close(store, id, owner.user_id).await? {
                    return Ok(());
                }
            }
            CloseStep::RecordClosed => {
                opened::advance(store, id, TerminalState::Closed).await?;
                return Ok(());
            }
            CloseStep::AskBridge => return ask_bridge(store, terminals, owner, id).await,
        }
    }
    Err(ApiError::unavailable(format!(
        "terminal session {id} changed while it was being closed; retry"
    ))
    .retriable())
}

/// Asks the replica bridging session `id` to close it (this one at once; another at its next
/// renewal) and waits until it is closed.
async fn ask_bridge(
    store: &Arc<dyn ShimStore>,
    terminals: &Terminals,
    owner: &Owner<'_>,
    id: &str,
) -> ApiResult<()> {
    opened::advance(store, id, TerminalState::Closing).await?;
    let here = terminals.close_here(id);
    tracing::info!(session = %id, user = %owner.user_id, bridged_here = here, "terminal session close asked for");
    let deadline = tokio::time::Instant::now() + CLOSE_WAIT;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(CLOSE_POLL).await;
        let found = find(store, owner, id).await?;
        match close_step(owner, found.as_ref(), berth_observations::now_ms()) {
            // Gone from the store altogether: pruned, so closed long enough.
            CloseStep::AlreadyClosed | CloseStep::NotFound => return Ok(()),
            CloseStep::RecordClosed => {
                opened::advance(store, id, TerminalState::Closed).await?;
                return Ok(());
            }
            CloseStep::AskBridge | CloseStep::ClosePending => {}
        }
    }
    Err(ApiError::unavailable(format!(
        "terminal session {id} is closing, but the replica that bridges it has not confirmed \
         within {} s (it renews every {} s); retry",
        CLOSE_WAIT.as_secs(),
        RENEW_EVERY.as_secs()
    ))
    .retriable())
}

#[cfg(test)]
mod tests;
