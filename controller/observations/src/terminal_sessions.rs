//! Terminal sessions created and not yet connected (spec §4.8), kept here rather than in one
//! shim's memory so that the WebSocket may reach any replica behind the Service: the replica
//! that created a session and the one its WebSocket lands on share only this store.
//!
//! A session is single-use: taking it deletes it in one statement, so of two replicas racing
//! for it exactly one gets it. Its ticket is stored only as a digest.

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

/// Where pending terminal sessions live: every [`ObservationStore`](crate::ObservationStore)
/// keeps them too. Calls block, as every store call.
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
    /// Removes and returns session `id` if it is pending at `now_ms` and `claim` fits it, in one
    /// statement: a second take, here or on another replica, finds nothing. A claim that does
    /// not fit consumes nothing.
    fn take_pending_terminal(
        &self,
        id: &str,
        claim: TerminalClaim<'_>,
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
}
