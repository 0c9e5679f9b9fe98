//! Login attempts on both backends.

use std::time::Duration;

use super::Fixture;
use crate::LoginAttempts;

on_both_backends!(
    attempts_count_up_within_the_window_on_every_handle_and_start_again_after_it,
    clearing_forgets_one_email_and_pruning_removes_ended_windows,
    attempts_counted_at_once_are_all_counted,
);

const WINDOW: Duration = Duration::from_secs(300);
const WINDOW_MS: i64 = 300_000;

fn attempts_count_up_within_the_window_on_every_handle_and_start_again_after_it(fixture: &Fixture) {
    let (a, b) = (fixture.open(), fixture.open());
    let start = 1_000_000;
    let counted = |store: &dyn crate::ObservationStore, at: i64| {
        store.count_login_attempt("sha256:a", at, WINDOW).unwrap()
    };
    assert_eq!(
        counted(a.as_ref(), start),
        LoginAttempts {
            count: 1,
            window_start_ms: start
        }
    );
    assert_eq!(
        counted(b.as_ref(), start + 10).count,
        2,
        "shared by handles"
    );
    assert_eq!(counted(a.as_ref(), start + WINDOW_MS - 1).count, 3);
    assert_eq!(
        b.count_login_attempt("sha256:other", start + 20, WINDOW)
            .unwrap()
            .count,
        1,
        "each email counts alone"
    );
    // The window ends its length after its first attempt; the next attempt starts a new one.
    assert_eq!(
        counted(b.as_ref(), start + WINDOW_MS),
        LoginAttempts {
            count: 1,
            window_start_ms: start + WINDOW_MS
        }
    );
    assert_eq!(counted(a.as_ref(), start + WINDOW_MS + 1).count, 2);
}

fn clearing_forgets_one_email_and_pruning_removes_ended_windows(fixture: &Fixture) {
    let store = fixture.open();
    let start = 1_000_000;
    for _ in 0..3 {
        store
            .count_login_attempt("sha256:a", start, WINDOW)
            .unwrap();
        store
            .count_login_attempt("sha256:b", start, WINDOW)
            .unwrap();
    }
    store.clear_login_attempts("sha256:a").unwrap();
    store.clear_login_attempts("sha256:unknown").unwrap();
    let count = |email: &str| store.count_login_attempt(email, start + 1, WINDOW).unwrap();
    assert_eq!(count("sha256:a").count, 1, "cleared");
    assert_eq!(count("sha256:b").count, 4, "kept");
    store
        .count_login_attempt("sha256:late", start + 100, WINDOW)
        .unwrap();
    // Windows begun: b at `start`, a (again) at `start + 1`, late at `start + 100`.
    assert_eq!(store.prune_login_attempts(start).unwrap(), 0);
    assert_eq!(store.prune_login_attempts(start + 2).unwrap(), 2);
    assert_eq!(store.prune_login_attempts(start + 2).unwrap(), 0);
    assert_eq!(count("sha256:b").count, 1, "pruned");
    assert_eq!(
        store
            .count_login_attempt("sha256:late", start + 101, WINDOW)
            .unwrap()
            .count,
        2
    );
}

fn attempts_counted_at_once_are_all_counted(fixture: &Fixture) {
    let handles = [fixture.open(), fixture.open()];
    let now = crate::now_ms();
    std::thread::scope(|scope| {
        for store in &handles {
            scope.spawn(move || {
                for _ in 0..10 {
                    store.count_login_attempt("sha256:a", now, WINDOW).unwrap();
                }
            });
        }
    });
    let last = handles[0]
        .count_login_attempt("sha256:a", now, WINDOW)
        .unwrap();
    assert_eq!(last.count, 21);
}
