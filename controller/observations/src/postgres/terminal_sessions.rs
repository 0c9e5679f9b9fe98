//! Terminal sessions in the PostgreSQL store.

use std::sync::LazyLock;

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{Failed, PostgresStore, numbered};
use crate::StoreError;
use crate::terminal_sessions::{
    COUNT_OF_USER, INSERT, INSERT_OPENED, OpenedTerminal, PRUNE, PRUNE_OPENED, PendingTerminal,
    RENEW, TO_CLOSED, TO_CLOSING, TerminalClaim, TerminalSessionStore, TerminalState,
    close_pending_sql, has_room, of_user_sql, opened, opened_of_user_sql, opened_one_sql,
    take_by_creator_sql, take_by_ticket_sql,
};

/// Serializes one user's inserts across replicas, so the cap's count stays true until its
/// insert commits. Kubernetes names hold no `/`, so the key names one user.
const LOCK_USER: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended('berth-terminal/' || $1::text, 0))";

/// The statements in PostgreSQL's placeholders, numbered once per process.
struct Statements {
    insert: String,
    count_of_user: String,
    take_by_ticket: String,
    take_by_creator: String,
    of_user: String,
    prune: String,
    close_pending: String,
    insert_opened: String,
    opened_of_user: String,
    opened_one: String,
    renew: String,
    to_closing: String,
    to_closed: String,
    prune_opened: String,
}

static SQL: LazyLock<Statements> = LazyLock::new(|| Statements {
    insert: numbered(INSERT),
    count_of_user: numbered(COUNT_OF_USER),
    take_by_ticket: numbered(&take_by_ticket_sql()),
    take_by_creator: numbered(&take_by_creator_sql()),
    of_user: numbered(&of_user_sql()),
    prune: numbered(PRUNE),
    close_pending: numbered(&close_pending_sql()),
    insert_opened: numbered(INSERT_OPENED),
    opened_of_user: numbered(&opened_of_user_sql()),
    opened_one: numbered(&opened_one_sql()),
    renew: numbered(RENEW),
    to_closing: numbered(TO_CLOSING),
    to_closed: numbered(TO_CLOSED),
    prune_opened: numbered(PRUNE_OPENED),
});

fn pending(row: &Row) -> PendingTerminal {
    PendingTerminal {
        id: row.get(0),
        user_id: row.get(1),
        login_session_id: row.get(2),
        ticket_digest: row.get(3),
        created_ms: row.get(4),
        expires_ms: row.get(5),
        detail: row.get(6),
    }
}

fn opened_row(row: &Row) -> OpenedTerminal {
    OpenedTerminal {
        id: row.get(0),
        user_id: row.get(1),
        state: TerminalState::parse(row.get(2)),
        created_ms: row.get(3),
        lease_ms: row.get(4),
        ended_ms: row.get(5),
        detail: row.get(6),
    }
}

impl PostgresStore {
    /// Removes a pending session with `take` (a `DELETE … RETURNING` with `take_params`) and
    /// records it opened in `state`, in one transaction: of two at once, the second waits for
    /// the first's row lock and then finds the row gone.
    fn move_pending(
        &self,
        take: &'static str,
        take_params: &[&(dyn ToSql + Sync)],
        state: TerminalState,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<PendingTerminal>, StoreError> {
        self.block_on(self.run(async |connection| {
            let take = connection.prepare(take).await?;
            let insert = connection.prepare(&SQL.insert_opened).await?;
            let transaction = connection.client.transaction().await?;
            let Some(row) = transaction.query_opt(&take, take_params).await? else {
                return Ok(None);
            };
            let taken = pending(&row);
            let session = opened(&taken, state, now_ms, lease_ms);
            let params: [&(dyn ToSql + Sync); 7] = [
                &session.id,
                &session.user_id,
                &session.state.as_str(),
                &session.created_ms,
                &session.lease_ms,
                &session.ended_ms,
                &session.detail,
            ];
            transaction.execute(&insert, &params).await?;
            transaction
                .commit()
                .await
                .map_err(Failed::maybe_committed)?;
            Ok(Some(taken))
        }))
    }
}

impl TerminalSessionStore for PostgresStore {
    fn insert_pending_terminal(
        &self,
        session: &PendingTerminal,
        max_per_user: usize,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.block_on(self.run(async |connection| {
            let lock = connection.prepare(LOCK_USER).await?;
            let count = connection.prepare(&SQL.count_of_user).await?;
            let insert = connection.prepare(&SQL.insert).await?;
            let transaction = connection.client.transaction().await?;
            transaction.execute(&lock, &[&session.user_id]).await?;
            let waiting: i64 = transaction
                .query_one(&count, &[&session.user_id, &now_ms])
                .await?
                .get(0);
            if !has_room(waiting, max_per_user) {
                return Ok(false);
            }
            let params: [&(dyn ToSql + Sync); 7] = [
                &session.id,
                &session.user_id,
                &session.login_session_id,
                &session.ticket_digest,
                &session.created_ms,
                &session.expires_ms,
                &session.detail,
            ];
            transaction.execute(&insert, &params).await?;
            transaction
                .commit()
                .await
                .map_err(Failed::maybe_committed)?;
            Ok(true)
        }))
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
                &SQL.take_by_ticket,
                &[&id, &digest, &now_ms],
                active,
                now_ms,
                lease_ms,
            ),
            TerminalClaim::Creator {
                user_id,
                login_session_id,
            } => self.move_pending(
                &SQL.take_by_creator,
                &[&id, &user_id, &login_session_id, &now_ms],
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
            &SQL.close_pending,
            &[&id, &user_id, &now_ms],
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
        let rows = self.block_on(self.run(async |connection| {
            let select = connection.prepare(&SQL.of_user).await?;
            Ok(connection
                .client
                .query(&select, &[&user_id, &now_ms])
                .await?)
        }))?;
        Ok(rows.iter().map(pending).collect())
    }

    fn prune_pending_terminals(&self, now_ms: i64) -> Result<usize, StoreError> {
        let removed = self.block_on(self.run(async |connection| {
            let prune = connection.prepare(&SQL.prune).await?;
            Ok(connection.client.execute(&prune, &[&now_ms]).await?)
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    fn opened_terminals(
        &self,
        user_id: &str,
        now_ms: i64,
    ) -> Result<Vec<OpenedTerminal>, StoreError> {
        let rows = self.block_on(self.run(async |connection| {
            let select = connection.prepare(&SQL.opened_of_user).await?;
            Ok(connection
                .client
                .query(&select, &[&user_id, &now_ms])
                .await?)
        }))?;
        Ok(rows.iter().map(opened_row).collect())
    }

    fn opened_terminal(
        &self,
        id: &str,
        user_id: &str,
    ) -> Result<Option<OpenedTerminal>, StoreError> {
        let row = self.block_on(self.run(async |connection| {
            let select = connection.prepare(&SQL.opened_one).await?;
            Ok(connection
                .client
                .query_opt(&select, &[&id, &user_id])
                .await?)
        }))?;
        Ok(row.as_ref().map(opened_row))
    }

    fn renew_terminal(&self, id: &str, lease_ms: i64) -> Result<Option<TerminalState>, StoreError> {
        let row = self.block_on(self.run(async |connection| {
            let renew = connection.prepare(&SQL.renew).await?;
            Ok(connection
                .client
                .query_opt(&renew, &[&id, &lease_ms])
                .await?)
        }))?;
        Ok(row.map(|row| TerminalState::parse(row.get(0))))
    }

    fn advance_terminal(
        &self,
        id: &str,
        state: TerminalState,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let moved = self.block_on(self.run(async |connection| {
            Ok(match state {
                TerminalState::Active => 0,
                TerminalState::Closing => {
                    let update = connection.prepare(&SQL.to_closing).await?;
                    connection.client.execute(&update, &[&id]).await?
                }
                TerminalState::Closed => {
                    let update = connection.prepare(&SQL.to_closed).await?;
                    connection.client.execute(&update, &[&id, &now_ms]).await?
                }
            })
        }))?;
        Ok(moved > 0)
    }

    fn prune_opened_terminals(&self, before_ms: i64) -> Result<usize, StoreError> {
        let removed = self.block_on(self.run(async |connection| {
            let prune = connection.prepare(&SQL.prune_opened).await?;
            Ok(connection.client.execute(&prune, &[&before_ms]).await?)
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}
