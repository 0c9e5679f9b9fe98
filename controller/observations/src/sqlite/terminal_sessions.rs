//! Pending terminal sessions in the SQLite store.

use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};

use super::SqliteStore;
use crate::StoreError;
use crate::terminal_sessions::{
    COUNT_OF_USER, INSERT, PRUNE, PendingTerminal, TerminalClaim, TerminalSessionStore, has_room,
    of_user_sql, take_by_creator_sql, take_by_ticket_sql,
};

fn pending(row: &Row<'_>) -> rusqlite::Result<PendingTerminal> {
    Ok(PendingTerminal {
        id: row.get(0)?,
        user_id: row.get(1)?,
        login_session_id: row.get(2)?,
        ticket_digest: row.get(3)?,
        created_ms: row.get(4)?,
        expires_ms: row.get(5)?,
        detail: row.get(6)?,
    })
}

impl TerminalSessionStore for SqliteStore {
    fn insert_pending_terminal(
        &self,
        session: &PendingTerminal,
        max_per_user: usize,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut connection = self.connection();
        // A write transaction from the start: another process counting at once waits for it.
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let waiting: i64 =
            transaction.query_row(COUNT_OF_USER, params![session.user_id, now_ms], |row| {
                row.get(0)
            })?;
        if !has_room(waiting, max_per_user) {
            return Ok(false);
        }
        transaction.execute(
            INSERT,
            params![
                session.id,
                session.user_id,
                session.login_session_id,
                session.ticket_digest,
                session.created_ms,
                session.expires_ms,
                session.detail
            ],
        )?;
        transaction.commit()?;
        Ok(true)
    }

    fn take_pending_terminal(
        &self,
        id: &str,
        claim: TerminalClaim<'_>,
        now_ms: i64,
    ) -> Result<Option<PendingTerminal>, StoreError> {
        let connection = self.connection();
        let taken = match claim {
            TerminalClaim::Ticket { digest } => connection
                .query_row(&take_by_ticket_sql(), params![id, digest, now_ms], pending)
                .optional()?,
            TerminalClaim::Creator {
                user_id,
                login_session_id,
            } => connection
                .query_row(
                    &take_by_creator_sql(),
                    params![id, user_id, login_session_id, now_ms],
                    pending,
                )
                .optional()?,
        };
        Ok(taken)
    }

    fn pending_terminals(
        &self,
        user_id: &str,
        now_ms: i64,
    ) -> Result<Vec<PendingTerminal>, StoreError> {
        let connection = self.connection();
        let mut select = connection.prepare_cached(&of_user_sql())?;
        let rows = select.query_map(params![user_id, now_ms], pending)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn prune_pending_terminals(&self, now_ms: i64) -> Result<usize, StoreError> {
        Ok(self.connection().execute(PRUNE, params![now_ms])?)
    }
}
