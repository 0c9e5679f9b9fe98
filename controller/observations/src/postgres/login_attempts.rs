//! Login attempts in the PostgreSQL store.

use std::sync::LazyLock;
use std::time::Duration;

use super::{PostgresStore, numbered};
use crate::StoreError;
use crate::login_attempts::{CLEAR, COUNT, LoginAttemptStore, LoginAttempts, PRUNE, window_cutoff};

static COUNT_SQL: LazyLock<String> = LazyLock::new(|| numbered(COUNT));
static CLEAR_SQL: LazyLock<String> = LazyLock::new(|| numbered(CLEAR));
static PRUNE_SQL: LazyLock<String> = LazyLock::new(|| numbered(PRUNE));

impl LoginAttemptStore for PostgresStore {
    fn count_login_attempt(
        &self,
        email_digest: &str,
        now_ms: i64,
        window: Duration,
    ) -> Result<LoginAttempts, StoreError> {
        let cutoff = window_cutoff(now_ms, window);
        self.block_on(self.run(async |connection| {
            let count = connection.prepare(&COUNT_SQL).await?;
            // A retry after a lost reply may count the attempt twice: the safe side.
            let row = connection
                .client
                .query_one(&count, &[&email_digest, &now_ms, &cutoff])
                .await?;
            Ok(LoginAttempts {
                count: row.get(0),
                window_start_ms: row.get(1),
            })
        }))
    }

    fn clear_login_attempts(&self, email_digest: &str) -> Result<(), StoreError> {
        self.block_on(self.run(async |connection| {
            let clear = connection.prepare(&CLEAR_SQL).await?;
            connection.client.execute(&clear, &[&email_digest]).await?;
            Ok(())
        }))
    }

    fn prune_login_attempts(&self, before_ms: i64) -> Result<usize, StoreError> {
        let removed = self.block_on(self.run(async |connection| {
            let prune = connection.prepare(&PRUNE_SQL).await?;
            Ok(connection.client.execute(&prune, &[&before_ms]).await?)
        }))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }
}
