//! Login attempts per email, counted in a window that every shim replica shares, so the
//! limit on password guessing holds for the Service rather than per replica. An attempt is
//! counted before its password is checked and the count forgotten when a login succeeds, so
//! guesses sent to several replicas at once are all counted. The store keys counts by a digest
//! of the email (the shim's choice): no address sits in it in clear.

use std::time::Duration;

use crate::StoreError;

/// The attempts counted for one email in its current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginAttempts {
    /// Attempts in the window, the one just counted included.
    pub count: i64,
    /// When the window began (its first attempt), in Unix milliseconds.
    pub window_start_ms: i64,
}

/// Where login attempts are counted: every [`ObservationStore`](crate::ObservationStore) keeps
/// them too. Calls block, as every store call.
pub trait LoginAttemptStore: Send + Sync {
    /// Counts one attempt for `email_digest` at `now_ms` and returns its window's count. A
    /// window that began `window` or longer before `now_ms` starts again with this attempt.
    /// One statement (an upsert), so attempts counted at once on several replicas all count.
    fn count_login_attempt(
        &self,
        email_digest: &str,
        now_ms: i64,
        window: Duration,
    ) -> Result<LoginAttempts, StoreError>;
    /// Forgets the attempts of `email_digest` (its login succeeded).
    fn clear_login_attempts(&self, email_digest: &str) -> Result<(), StoreError>;
    /// Removes counts whose window began before `before_ms`; returns how many went.
    fn prune_login_attempts(&self, before_ms: i64) -> Result<usize, StoreError>;
}

/// The earliest window start still open at `now_ms`: a window that began at or before it has
/// ended.
pub(crate) fn window_cutoff(now_ms: i64, window: Duration) -> i64 {
    now_ms.saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX))
}

/// The same SQL suits SQLite and PostgreSQL (placeholders numbered for each).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS login_attempts (
    email_digest    TEXT   PRIMARY KEY,
    attempts        BIGINT NOT NULL,
    window_start_ms BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS login_attempts_by_window ON login_attempts (window_start_ms);
";

/// `?2`: now; `?3`: the [`window_cutoff`]. Both `SET` expressions read the row as it was.
pub(crate) const COUNT: &str = "
INSERT INTO login_attempts (email_digest, attempts, window_start_ms) VALUES (?1, 1, ?2)
ON CONFLICT (email_digest) DO UPDATE SET
    attempts = CASE WHEN login_attempts.window_start_ms > ?3
                    THEN login_attempts.attempts + 1 ELSE 1 END,
    window_start_ms = CASE WHEN login_attempts.window_start_ms > ?3
                           THEN login_attempts.window_start_ms ELSE ?2 END
RETURNING attempts, window_start_ms";

pub(crate) const CLEAR: &str = "DELETE FROM login_attempts WHERE email_digest = ?1";

pub(crate) const PRUNE: &str = "DELETE FROM login_attempts WHERE window_start_ms < ?1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_ends_its_length_after_it_began() {
        let window = Duration::from_secs(300);
        assert_eq!(window_cutoff(1_000_000, window), 700_000);
        assert_eq!(window_cutoff(0, window), -300_000);
        assert_eq!(window_cutoff(i64::MIN, window), i64::MIN);
    }
}
