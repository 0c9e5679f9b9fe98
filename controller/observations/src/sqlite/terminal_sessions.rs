//! Terminal sessions in the SQLite store.

use rusqlite::{OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::SqliteStore;
use crate::StoreError;
use crate::terminal_sessions::{
    COUNT_OF_USER, INSERT, INSERT_OPENED, OpenedTerminal, PRUNE, PRUNE_OPENED, PendingTerminal,
    RENEW, TO_CLOSED, TO_CLOSING, TerminalClaim, TerminalSessionStore, TerminalState,
    close_pending_sql, has_room, of_user_sql, opened, opened_of_user_sql, opened_one_sql,
    take_by_creator_sql, take_by_ticket_sql,
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

fn opened_row(row: &Row<'_>) -> rusqlite::Result<OpenedTerminal> {
    Ok(OpenedTerminal {
        id: row.get(0)?,
        user_id: row.get(1)?,
        state: TerminalState::parse(&row.get::<_, String>(2)?),
        created_ms: row.get(3)?,
        lease_ms: row.get(4)?,
        ended_ms: row.get(5)?,
        detail: row.get(6)?,
    })
}

fn insert_opened(transaction: &Transaction<'_>, session: &OpenedTerminal) -> rusqlite::Result<()> {
    transaction.execute(
        INSERT_OPENED,
        params![
            session.id,
            session.user_id,
            session.state.as_str(),
            session.created_ms,
            session.lease_ms,
            session.ended_ms,
            session.detail
        ],
    )?;
    Ok(())
}

impl SqliteStore {
    /// Removes a pending session with `take` (a `DELETE … RETURNING`) and records it opened
    /// in `state`, in one write transaction.
    fn move_pending(
        &self,
        take: &str,
        take_params: impl rusqlite::Params,
        state: TerminalState,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<PendingTerminal>, StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let taken = transaction
            .query_row(take, take_params, pending)
            .optional()?;
        if let Some(taken) = &taken {
            insert_opened(&transaction, &opened(taken, state, now_ms, lease_ms))?;
        }
        transaction.commit()?;
        Ok(taken)
    }
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
        lease_ms: i64,
    ) -> Result<Option<PendingTerminal>, StoreError> {
        let active = TerminalState::Active;
        match claim {
            TerminalClaim::Ticket { digest } => self.move_pending(
                &take_by_ticket_sql(),
                params![id, digest, now_ms],
                active,
                now_ms,
                lease_ms,
            ),
            TerminalClaim::Creator {
                user_id,
                login_session_id,
            } => self.move_pending(
                &take_by_creator_sql(),
                params![id, user_id, login_session_id, now_ms],
                active,
                now_ms,
                lease_ms,
            ),
        }
    }

    fn close_pending_terminal(
        &self,
        id: &str,
        user_id: &str,
        now_ms: i64,
    ) -> Result<Option<PendingTerminal>, StoreError> {
        self.move_pending(
            &close_pending_sql(),
            params![id, user_id, now_ms],
            TerminalState::Closed,
            now_ms,
            now_ms,
        )
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

    fn opened_terminals(
        &self,
        user_id: &str,
        now_ms: i64,
    ) -> Result<Vec<OpenedTerminal>, StoreError> {
        let connection = self.connection();
        let mut select = connection.prepare_cached(&opened_of_user_sql())?;
        let rows = select.query_map(params![user_id, now_ms], opened_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn opened_terminal(
        &self,
        id: &str,
        user_id: &str,
    ) -> Result<Option<OpenedTerminal>, StoreError> {
        let connection = self.connection();
        Ok(connection
            .query_row(&opened_one_sql(), params![id, user_id], opened_row)
            .optional()?)
    }

    fn renew_terminal(&self, id: &str, lease_ms: i64) -> Result<Option<TerminalState>, StoreError> {
        let connection = self.connection();
        let state: Option<String> = connection
            .query_row(RENEW, params![id, lease_ms], |row| row.get(0))
            .optional()?;
        Ok(state.as_deref().map(TerminalState::parse))
    }

    fn advance_terminal(
        &self,
        id: &str,
        state: TerminalState,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let connection = self.connection();
        let moved = match state {
            TerminalState::Active => 0,
            TerminalState::Closing => connection.execute(TO_CLOSING, params![id])?,
            TerminalState::Closed => connection.execute(TO_CLOSED, params![id, now_ms])?,
        };
        Ok(moved > 0)
    }

    fn prune_opened_terminals(&self, before_ms: i64) -> Result<usize, StoreError> {
        Ok(self
            .connection()
            .execute(PRUNE_OPENED, params![before_ms])?)
    }
}
