//! Login attempts in the SQLite store.

use std::time::Duration;

use rusqlite::params;

use super::SqliteStore;
use crate::StoreError;
use crate::login_attempts::{CLEAR, COUNT, LoginAttemptStore, LoginAttempts, PRUNE, window_cutoff};

impl LoginAttemptStore for SqliteStore {
    fn count_login_attempt(
        &self,
        email_digest: &str,
        now_ms: i64,
        window: Duration,
    ) -> Result<LoginAttempts, StoreError> {
        let connection = self.connection();
        let attempts = connection.prepare_cached(COUNT)?.query_row(
            params![email_digest, now_ms, window_cutoff(now_ms, window)],
            |row| {
                Ok(LoginAttempts {
                    count: row.get(0)?,
                    window_start_ms: row.get(1)?,
                })
            },
        )?;
        Ok(attempts)
    }

    fn clear_login_attempts(&self, email_digest: &str) -> Result<(), StoreError> {
        self.connection().execute(CLEAR, params![email_digest])?;
        Ok(())
    }

    fn prune_login_attempts(&self, before_ms: i64) -> Result<usize, StoreError> {
        Ok(self.connection().execute(PRUNE, params![before_ms])?)
    }
}
