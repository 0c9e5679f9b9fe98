//! Pending terminal sessions in the PostgreSQL store.

use std::sync::LazyLock;

use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::{Failed, PostgresStore, numbered};
use crate::StoreError;
use crate::terminal_sessions::{
    COUNT_OF_USER, INSERT, PRUNE, PendingTerminal, TerminalClaim, TerminalSessionStore, has_room,
    of_user_sql, take_by_creator_sql, take_by_ticket_sql,
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
}

static SQL: LazyLock<Statements> = LazyLock::new(|| Statements {
    insert: numbered(INSERT),
    count_of_user: numbered(COUNT_OF_USER),
    take_by_ticket: numbered(&take_by_ticket_sql()),
    take_by_creator: numbered(&take_by_creator_sql()),
    of_user: numbered(&of_user_sql()),
    prune: numbered(PRUNE),
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
    ) -> Result<Option<PendingTerminal>, StoreError> {
        // One autocommitted DELETE … RETURNING: of two takes at once, the second waits for the
        // first's row lock and then finds the row gone.
        let row = self.block_on(self.run(async |connection| {
            Ok(match claim {
                TerminalClaim::Ticket { digest } => {
                    let take = connection.prepare(&SQL.take_by_ticket).await?;
                    connection
                        .client
                        .query_opt(&take, &[&id, &digest, &now_ms])
                        .await?
                }
                TerminalClaim::Creator {
                    user_id,
                    login_session_id,
                } => {
                    let take = connection.prepare(&SQL.take_by_creator).await?;
                    connection
                        .client
                        .query_opt(&take, &[&id, &user_id, &login_session_id, &now_ms])
                        .await?
                }
            })
        }))?;
        Ok(row.as_ref().map(pending))
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
}
