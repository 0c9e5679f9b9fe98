//! Slows password guessing: after too many failed logins for one email, refuse for a while.
//!
//! Attempts are counted in the observation store, which every shim replica shares, so the
//! limit holds for the Service rather than per replica. Each attempt is counted before its
//! password is checked (one upsert) and the count forgotten when the login succeeds: guesses
//! sent at once, to one replica or several, are all counted. The store sees a digest of the
//! lower-cased email only.

use std::sync::Arc;
use std::time::Duration;

use berth_observations::{LoginAttempts, ShimStore};

use crate::error::{ApiError, ApiResult};
use crate::observation_store::store_call;
use crate::token::digest;

/// Failed logins allowed per email within [`WINDOW`].
pub const MAX_FAILURES: u32 = 5;
/// How long failures are remembered, from the first of them.
pub const WINDOW: Duration = Duration::from_secs(300);

pub struct LoginLimiter {
    store: Arc<dyn ShimStore>,
}

impl LoginLimiter {
    pub fn new(store: Arc<dyn ShimStore>) -> Self {
        Self { store }
    }

    /// Counts a login attempt for `email` before its password is checked; 429 when
    /// [`MAX_FAILURES`] attempts within the window failed already. The attempt stays counted
    /// unless [`succeeded`](Self::succeeded) forgets it. A failing store is a 503: the limit
    /// is never waived.
    pub async fn attempt(&self, email: &str) -> ApiResult<()> {
        let key = email_key(email);
        let now = berth_observations::now_ms();
        let attempts = store_call(&self.store, "logins", move |store| {
            let attempts = store.count_login_attempt(&key, now, WINDOW)?;
            if attempts.count == 1 {
                // A window began: a moment to drop the windows that ended, of every email.
                let ended = now.saturating_sub(millis(WINDOW));
                if let Err(error) = store.prune_login_attempts(ended) {
                    tracing::warn!(%error, "ended login-attempt windows could not be removed");
                }
            }
            Ok(attempts)
        })
        .await?;
        match refusal(&attempts, now) {
            Some(wait) => Err(ApiError::rate_limited(
                format!("too many failed logins; try again in {wait} s"),
                wait,
            )),
            None => Ok(()),
        }
    }

    /// Forgets `email`'s attempts: its login succeeded. A failing store only costs the user
    /// attempts, so it is logged and the login goes on.
    pub async fn succeeded(&self, email: &str) {
        let key = email_key(email);
        let cleared = store_call(&self.store, "logins", move |store| {
            store.clear_login_attempts(&key)
        })
        .await;
        if cleared.is_err() {
            tracing::warn!("a successful login's failed attempts could not be forgotten");
        }
    }
}

/// What the store keys an email's attempts by: no address in clear, one key however it is
/// spelt.
fn email_key(email: &str) -> String {
    digest(&email.trim().to_lowercase())
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The seconds to wait when `attempts` (the current one included) are too many at `now_ms`,
/// else `None`.
fn refusal(attempts: &LoginAttempts, now_ms: i64) -> Option<u64> {
    if attempts.count <= i64::from(MAX_FAILURES) {
        return None;
    }
    let ends = attempts.window_start_ms.saturating_add(millis(WINDOW));
    let wait_ms = u64::try_from(ends.saturating_sub(now_ms)).unwrap_or(0);
    Some(wait_ms.div_ceil(1000).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempts(count: i64, window_start_ms: i64) -> LoginAttempts {
        LoginAttempts {
            count,
            window_start_ms,
        }
    }

    #[test]
    fn the_attempt_after_the_allowed_failures_is_refused_until_the_window_ends() {
        let start = 1_000_000;
        for count in 1..=i64::from(MAX_FAILURES) {
            assert_eq!(
                refusal(&attempts(count, start), start + 10),
                None,
                "{count}"
            );
        }
        let over = attempts(i64::from(MAX_FAILURES) + 1, start);
        assert_eq!(refusal(&over, start), Some(300));
        assert_eq!(refusal(&over, start + 299_001), Some(1));
        assert_eq!(refusal(&over, start + 299_999), Some(1), "never 0 s");
        assert_eq!(refusal(&over, start + 400_000), Some(1));
    }

    #[test]
    fn an_email_is_keyed_by_a_digest_of_its_lower_case() {
        let key = email_key(" Someone@Example.COM ");
        assert_eq!(key, email_key("someone@example.com"));
        assert!(key.starts_with("sha256:"), "{key}");
        assert!(!key.contains("someone"), "{key}");
        assert_ne!(key, email_key("other@example.com"));
    }

    #[tokio::test]
    async fn refuses_after_too_many_failures_on_any_handle_and_forgets_on_success() {
        let dir = std::env::temp_dir().join(format!(
            "berth-limiter-{}-{}",
            std::process::id(),
            berth_observations::now_ms()
        ));
        let location = berth_observations::StoreLocation::Sqlite(dir.join("store.sqlite"));
        let open = || berth_observations::open(&location).unwrap();
        // Two handles on one store: two replicas.
        let (a, b) = (LoginLimiter::new(open()), LoginLimiter::new(open()));
        for n in 0..MAX_FAILURES {
            let limiter = if n % 2 == 0 { &a } else { &b };
            assert!(limiter.attempt("a@b.c").await.is_ok(), "{n}");
        }
        assert_eq!(a.attempt("A@b.c").await.unwrap_err().status, 429);
        assert_eq!(b.attempt("a@b.c").await.unwrap_err().status, 429);
        assert!(b.attempt("other@b.c").await.is_ok());
        a.succeeded("a@b.c").await;
        assert!(b.attempt("a@b.c").await.is_ok());
        std::fs::remove_dir_all(&dir).ok();
    }
}
