//! Terminal sessions (spec §4.8), kept here rather than in one shim's memory so that every
//! replica behind the Service sees them: the replica that created a session, the one its
//! WebSocket lands on and the one asked to list, show or close it share only this store.
//!
//! A created session waits in `pending_terminal_sessions`. It is single-use: taking it moves it,
//! in one transaction, into `opened_terminal_sessions` as `active`, so of two replicas racing
//! for it exactly one gets it. Its ticket is stored only as a digest. The replica that bridges
//! an opened session renews its lease while the shell runs (a replica that died leaves sessions
//! whose lease lapses), and any replica may ask for it to close by marking it `closing`. A
//! closed session stays a while, so that closing it again answers the same.

use crate::StoreError;

/// A created session waiting for its WebSocket.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingTerminal {
    pub id: String,
    /// The user who created it.
    pub user_id: String,
    /// The login session it was created in: without a ticket only that one may connect.
    pub login_session_id: String,
    /// `sha256:<hex>` of the session's ticket; the ticket itself is never stored.
    pub ticket_digest: String,
    /// When it was created, in Unix milliseconds: the list's order.
    pub created_ms: i64,
    /// When it stops waiting, in Unix milliseconds.
    pub expires_ms: i64,
    /// JSON: what the shim needs to open the session and to list it.
    pub detail: String,
}

/// Who takes a pending session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalClaim<'a> {
    /// Whoever holds the ticket whose digest this is.
    Ticket { digest: &'a str },
    /// The user and login session that created it.
    Creator {
        user_id: &'a str,
        login_session_id: &'a str,
    },
}

/// Where a session is once its WebSocket took it (or it was closed while it waited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalState {
    /// Its shell runs, bridged by one replica.
    Active,
    /// Being closed: a replica asked for it, or its shell ended and its socket is closing.
    Closing,
    /// Closed.
    Closed,
}

impl TerminalState {
    /// How the store spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Closing => "closing",
            Self::Closed => "closed",
        }
    }

    pub(crate) fn parse(text: &str) -> Self {
        match text {
            "active" => Self::Active,
            "closing" => Self::Closing,
            // Only this module writes the column; anything else reads as over.
            _ => Self::Closed,
        }
    }
}

/// A session its WebSocket took, or one closed while it waited.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedTerminal {
    pub id: String,
    /// The user who created it.
    pub user_id: String,
    pub state: TerminalState,
    /// When it was created, in Unix milliseconds: the list's order.
    pub created_ms: i64,
    /// Until when the replica bridging it vouches for it, in Unix milliseconds: renewed while
    /// the session runs, so the sessions of a replica that died lapse.
    pub lease_ms: i64,
    /// When it closed, in Unix milliseconds.
    pub ended_ms: Option<i64>,
    /// The pending session's `detail`, as it was.
    pub detail: String,
}

/// Where terminal sessions live: every [`ObservationStore`](crate::ObservationStore) keeps
/// them too. Calls block, as every store call.
pub trait TerminalSessionStore: Send + Sync {
    /// Stores `session` unless its user already has `max_per_user` sessions pending at
    /// `now_ms`; returns whether it was stored. The count and the insert are one transaction,
    /// serialized per user, so replicas creating sessions at once cannot pass the cap together.
    fn insert_pending_terminal(
        &self,
        session: &PendingTerminal,
        max_per_user: usize,
        now_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Removes and returns session `id` if it is pending at `now_ms` and `claim` fits it, and
    /// records it opened (`active`, its lease until `lease_ms`), in one transaction: a second
    /// take, here or on another replica, finds nothing. A claim that does not fit consumes
    /// nothing.
    fn take_pending_terminal(
        &self,
        id: &str,
        claim: TerminalClaim<'_>,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<PendingTerminal>, StoreError>;
    /// Removes and returns session `id` of `user_id` if it is pending at `now_ms`, and records
    /// it `closed` at `now_ms`, in one transaction; `None` when that user has no such session
    /// pending (it may have been taken meanwhile).
    fn close_pending_terminal(
        &self,
        id: &str,
        user_id: &str,
        now_ms: i64,
    ) -> Result<Option<PendingTerminal>, StoreError>;
    /// The user's sessions pending at `now_ms`, newest first.
    fn pending_terminals(
        &self,
        user_id: &str,
        now_ms: i64,
    ) -> Result<Vec<PendingTerminal>, StoreError>;
    /// Removes sessions expired at `now_ms`; returns how many went.
    fn prune_pending_terminals(&self, now_ms: i64) -> Result<usize, StoreError>;
    /// The user's opened sessions that are `active` or `closing` with a lease past `now_ms`,
    /// newest first.
    fn opened_terminals(
        &self,
        user_id: &str,
        now_ms: i64,
    ) -> Result<Vec<OpenedTerminal>, StoreError>;
    /// Opened session `id` of `user_id`, whatever its state and lease.
    fn opened_terminal(
        &self,
        id: &str,
        user_id: &str,
    ) -> Result<Option<OpenedTerminal>, StoreError>;
    /// Extends the lease of opened session `id` to `lease_ms` unless it is closed; returns its
    /// state, or `None` when it is closed or gone.
    fn renew_terminal(&self, id: &str, lease_ms: i64) -> Result<Option<TerminalState>, StoreError>;
    /// Moves opened session `id` forward to `state` (`active` → `closing` → `closed`, never
    /// back), noting `now_ms` as its end when it closes; returns whether it moved.
    fn advance_terminal(
        &self,
        id: &str,
        state: TerminalState,
        now_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Removes opened sessions closed, or whose lease lapsed, before `before_ms`; returns how
    /// many went.
    fn prune_opened_terminals(&self, before_ms: i64) -> Result<usize, StoreError>;
}

/// Whether a user with `waiting` pending sessions may create another.
pub(crate) fn has_room(waiting: i64, max_per_user: usize) -> bool {
    usize::try_from(waiting).is_ok_and(|waiting| waiting < max_per_user)
}

/// Table and indexes, created when a store opens; the same SQL suits SQLite and PostgreSQL
/// (placeholders numbered for each).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pending_terminal_sessions (
    id               TEXT   PRIMARY KEY,
    user_id          TEXT   NOT NULL,
    login_session_id TEXT   NOT NULL,
    ticket_digest    TEXT   NOT NULL,
    created_ms       BIGINT NOT NULL,
    expires_ms       BIGINT NOT NULL,
    detail           TEXT   NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_terminal_sessions_by_user
    ON pending_terminal_sessions (user_id, expires_ms);
CREATE INDEX IF NOT EXISTS pending_terminal_sessions_by_expiry
    ON pending_terminal_sessions (expires_ms);
CREATE TABLE IF NOT EXISTS opened_terminal_sessions (
    id         TEXT   PRIMARY KEY,
    user_id    TEXT   NOT NULL,
    state      TEXT   NOT NULL,
    created_ms BIGINT NOT NULL,
    lease_ms   BIGINT NOT NULL,
    ended_ms   BIGINT,
    detail     TEXT   NOT NULL
);
CREATE INDEX IF NOT EXISTS opened_terminal_sessions_by_user
    ON opened_terminal_sessions (user_id, lease_ms);
";

/// Columns every read returns, in [`PendingTerminal`]'s order.
const COLUMNS: &str =
    "id, user_id, login_session_id, ticket_digest, created_ms, expires_ms, detail";

pub(crate) const INSERT: &str = "
INSERT INTO pending_terminal_sessions
    (id, user_id, login_session_id, ticket_digest, created_ms, expires_ms, detail)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

pub(crate) const COUNT_OF_USER: &str =
    "SELECT count(*) FROM pending_terminal_sessions WHERE user_id = ?1 AND expires_ms > ?2";

pub(crate) fn take_by_ticket_sql() -> String {
    format!(
        "DELETE FROM pending_terminal_sessions
         WHERE id = ?1 AND ticket_digest = ?2 AND expires_ms > ?3
         RETURNING {COLUMNS}"
    )
}

pub(crate) fn take_by_creator_sql() -> String {
    format!(
        "DELETE FROM pending_terminal_sessions
         WHERE id = ?1 AND user_id = ?2 AND login_session_id = ?3 AND expires_ms > ?4
         RETURNING {COLUMNS}"
    )
}

pub(crate) fn of_user_sql() -> String {
    format!(
        "SELECT {COLUMNS} FROM pending_terminal_sessions
         WHERE user_id = ?1 AND expires_ms > ?2
         ORDER BY created_ms DESC, id DESC"
    )
}

pub(crate) const PRUNE: &str = "DELETE FROM pending_terminal_sessions WHERE expires_ms <= ?1";

pub(crate) fn close_pending_sql() -> String {
    format!(
        "DELETE FROM pending_terminal_sessions
         WHERE id = ?1 AND user_id = ?2 AND expires_ms > ?3
         RETURNING {COLUMNS}"
    )
}

/// Columns every read of an opened session returns, in [`OpenedTerminal`]'s order.
const OPENED_COLUMNS: &str = "id, user_id, state, created_ms, lease_ms, ended_ms, detail";

/// Records a taken (or closed) pending session as opened, in [`OpenedTerminal`]'s order.
pub(crate) const INSERT_OPENED: &str = "
INSERT INTO opened_terminal_sessions (id, user_id, state, created_ms, lease_ms, ended_ms, detail)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

pub(crate) fn opened_of_user_sql() -> String {
    format!(
        "SELECT {OPENED_COLUMNS} FROM opened_terminal_sessions
         WHERE user_id = ?1 AND state <> 'closed' AND lease_ms > ?2
         ORDER BY created_ms DESC, id DESC"
    )
}

pub(crate) fn opened_one_sql() -> String {
    format!("SELECT {OPENED_COLUMNS} FROM opened_terminal_sessions WHERE id = ?1 AND user_id = ?2")
}

pub(crate) const RENEW: &str = "
UPDATE opened_terminal_sessions SET lease_ms = ?2
WHERE id = ?1 AND state <> 'closed'
RETURNING state";

pub(crate) const TO_CLOSING: &str =
    "UPDATE opened_terminal_sessions SET state = 'closing' WHERE id = ?1 AND state = 'active'";

pub(crate) const TO_CLOSED: &str = "
UPDATE opened_terminal_sessions SET state = 'closed', ended_ms = ?2
WHERE id = ?1 AND state <> 'closed'";

/// A closed session is kept from its end, any other from its lease.
pub(crate) const PRUNE_OPENED: &str =
    "DELETE FROM opened_terminal_sessions WHERE COALESCE(ended_ms, lease_ms) < ?1";

/// The opened record of `pending`, taken (or closed) at `now_ms`.
pub(crate) fn opened(
    pending: &PendingTerminal,
    state: TerminalState,
    now_ms: i64,
    lease_ms: i64,
) -> OpenedTerminal {
    OpenedTerminal {
        id: pending.id.clone(),
        user_id: pending.user_id.clone(),
        state,
        created_ms: pending.created_ms,
        lease_ms,
        ended_ms: (state == TerminalState::Closed).then_some(now_ms),
        detail: pending.detail.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_below_it_only() {
        assert!(has_room(0, 16));
        assert!(has_room(15, 16));
        assert!(!has_room(16, 16));
        assert!(!has_room(17, 16));
        assert!(!has_room(0, 0));
    }

    #[test]
    fn a_state_reads_back_as_it_was_written() {
        for state in [
            TerminalState::Active,
            TerminalState::Closing,
            TerminalState::Closed,
        ] {
            assert_eq!(TerminalState::parse(state.as_str()), state);
        }
        assert_eq!(TerminalState::parse("unknown"), TerminalState::Closed);
    }
}
