//! Slows password guessing: after too many failed logins for one email, refuse for a while.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::ApiError;

/// Failed logins allowed per email within [`WINDOW`].
pub const MAX_FAILURES: u32 = 5;
/// How long failures are remembered.
pub const WINDOW: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct LoginLimiter {
    failures: Mutex<HashMap<String, (u32, Instant)>>,
}

impl LoginLimiter {
    /// 429 while `email` has too many recent failures.
    pub fn check(&self, email: &str) -> Result<(), ApiError> {
        let failures = self.failures.lock().expect("limiter lock");
        match failures.get(email) {
            Some((count, since)) if *count >= MAX_FAILURES && since.elapsed() < WINDOW => {
                let wait = WINDOW.saturating_sub(since.elapsed()).as_secs();
                Err(ApiError::rate_limited(
                    format!("too many failed logins; try again in {wait} s"),
                    wait,
                ))
            }
            _ => Ok(()),
        }
    }

    pub fn failed(&self, email: &str) {
        let mut failures = self.failures.lock().expect("limiter lock");
        let entry = failures
            .entry(email.to_string())
            .or_insert((0, Instant::now()));
        if entry.1.elapsed() >= WINDOW {
            *entry = (0, Instant::now());
        }
        entry.0 += 1;
    }

    pub fn succeeded(&self, email: &str) {
        self.failures.lock().expect("limiter lock").remove(email);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_after_too_many_failures_and_forgets_on_success() {
        let limiter = LoginLimiter::default();
        for _ in 0..MAX_FAILURES {
            assert!(limiter.check("a@b.c").is_ok());
            limiter.failed("a@b.c");
        }
        assert_eq!(limiter.check("a@b.c").unwrap_err().status, 429);
        assert!(limiter.check("other@b.c").is_ok());
        limiter.succeeded("a@b.c");
        assert!(limiter.check("a@b.c").is_ok());
    }
}
