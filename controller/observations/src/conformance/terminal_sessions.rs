//! Pending terminal sessions on both backends.

use super::Fixture;
use crate::{PendingTerminal, TerminalClaim, now_ms};

on_both_backends!(
    a_session_is_taken_once_by_its_ticket_or_its_creator_and_a_wrong_claim_takes_nothing,
    of_two_handles_racing_for_a_session_exactly_one_gets_it,
    an_expired_session_is_neither_listed_nor_taken_and_pruning_removes_it,
    a_user_gets_no_more_pending_sessions_than_the_cap,
    handles_creating_sessions_at_once_pass_the_cap_together_never,
);

const CONNECT_WITHIN_MS: i64 = 60_000;

fn session(id: &str, user: &str, created_ms: i64) -> PendingTerminal {
    PendingTerminal {
        id: id.into(),
        user_id: user.into(),
        login_session_id: format!("sess-{user}"),
        ticket_digest: format!("sha256:{id}"),
        created_ms,
        expires_ms: created_ms + CONNECT_WITHIN_MS,
        detail: format!(r#"{{"serverId":"srv-{id}"}}"#),
    }
}

fn ticket(digest: &str) -> TerminalClaim<'_> {
    TerminalClaim::Ticket { digest }
}

fn creator<'a>(user_id: &'a str, login_session_id: &'a str) -> TerminalClaim<'a> {
    TerminalClaim::Creator {
        user_id,
        login_session_id,
    }
}

fn a_session_is_taken_once_by_its_ticket_or_its_creator_and_a_wrong_claim_takes_nothing(
    fixture: &Fixture,
) {
    let store = fixture.open();
    let now = now_ms();
    let by_ticket = session("trm-1", "usr-a", now);
    let by_creator = session("trm-2", "usr-a", now + 1);
    assert!(store.insert_pending_terminal(&by_ticket, 16, now).unwrap());
    assert!(store.insert_pending_terminal(&by_creator, 16, now).unwrap());

    // Another replica's handle: wrong tickets, other users or login sessions consume nothing.
    let other = fixture.open();
    assert_eq!(
        other
            .take_pending_terminal("trm-1", ticket("sha256:forged"), now)
            .unwrap(),
        None
    );
    assert_eq!(
        other
            .take_pending_terminal("trm-2", ticket("sha256:trm-1"), now)
            .unwrap(),
        None,
        "a ticket opens its own session only"
    );
    for claim in [
        creator("usr-b", "sess-usr-a"),
        creator("usr-a", "sess-other"),
    ] {
        assert_eq!(
            other.take_pending_terminal("trm-2", claim, now).unwrap(),
            None
        );
    }
    let taken = other
        .take_pending_terminal("trm-1", ticket("sha256:trm-1"), now)
        .unwrap();
    assert_eq!(taken, Some(by_ticket), "comes back as it was stored");
    assert_eq!(
        store
            .take_pending_terminal("trm-1", ticket("sha256:trm-1"), now)
            .unwrap(),
        None,
        "single use"
    );
    let claim = creator("usr-a", "sess-usr-a");
    assert_eq!(
        store.take_pending_terminal("trm-2", claim, now).unwrap(),
        Some(by_creator)
    );
    assert_eq!(
        store.take_pending_terminal("trm-2", claim, now).unwrap(),
        None
    );
    assert!(store.pending_terminals("usr-a", now).unwrap().is_empty());
}

fn of_two_handles_racing_for_a_session_exactly_one_gets_it(fixture: &Fixture) {
    let handles = [fixture.open(), fixture.open()];
    let now = now_ms();
    for round in 0..20 {
        let id = format!("trm-{round}");
        let stored = session(&id, "usr-a", now);
        assert!(
            handles[0]
                .insert_pending_terminal(&stored, 16, now)
                .unwrap()
        );
        let barrier = std::sync::Barrier::new(2);
        let taken: Vec<bool> = std::thread::scope(|scope| {
            let racers: Vec<_> = handles
                .iter()
                .map(|store| {
                    let (id, barrier, digest) = (&id, &barrier, &stored.ticket_digest);
                    scope.spawn(move || {
                        barrier.wait();
                        store
                            .take_pending_terminal(id, ticket(digest), now)
                            .unwrap()
                            .is_some()
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert_eq!(
            taken.iter().filter(|t| **t).count(),
            1,
            "round {round}: {taken:?}"
        );
    }
}

fn an_expired_session_is_neither_listed_nor_taken_and_pruning_removes_it(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    let expired = session("trm-old", "usr-a", now - CONNECT_WITHIN_MS - 1);
    let current = session("trm-new", "usr-a", now);
    let newer = session("trm-newer", "usr-a", now + 5);
    let theirs = session("trm-theirs", "usr-b", now);
    for s in [&expired, &current, &newer, &theirs] {
        assert!(store.insert_pending_terminal(s, 16, now).unwrap());
    }
    let listed: Vec<String> = store
        .pending_terminals("usr-a", now)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, ["trm-newer", "trm-new"], "unexpired, newest first");
    assert_eq!(
        store
            .take_pending_terminal("trm-old", ticket("sha256:trm-old"), now)
            .unwrap(),
        None
    );
    // Expiry is exclusive: at its instant the session is gone.
    let at_expiry = current.expires_ms;
    assert_eq!(
        store
            .take_pending_terminal("trm-new", ticket("sha256:trm-new"), at_expiry)
            .unwrap(),
        None
    );
    assert_eq!(store.prune_pending_terminals(now).unwrap(), 1);
    assert_eq!(store.prune_pending_terminals(now).unwrap(), 0);
    assert_eq!(store.pending_terminals("usr-a", now).unwrap().len(), 2);
    assert_eq!(store.prune_pending_terminals(newer.expires_ms).unwrap(), 3);
    assert!(store.pending_terminals("usr-b", now).unwrap().is_empty());
}

fn a_user_gets_no_more_pending_sessions_than_the_cap(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    // An expired session does not count.
    let expired = session("trm-old", "usr-a", now - CONNECT_WITHIN_MS - 1);
    assert!(store.insert_pending_terminal(&expired, 3, now).unwrap());
    for n in 0..3 {
        let s = session(&format!("trm-{n}"), "usr-a", now);
        assert!(store.insert_pending_terminal(&s, 3, now).unwrap(), "{n}");
    }
    let over = session("trm-3", "usr-a", now);
    assert!(!store.insert_pending_terminal(&over, 3, now).unwrap());
    assert_eq!(store.pending_terminals("usr-a", now).unwrap().len(), 3);
    // Other users have caps of their own; a taken session frees a place.
    assert!(
        store
            .insert_pending_terminal(&session("trm-b", "usr-b", now), 3, now)
            .unwrap()
    );
    let claim = creator("usr-a", "sess-usr-a");
    assert!(
        store
            .take_pending_terminal("trm-0", claim, now)
            .unwrap()
            .is_some()
    );
    assert!(store.insert_pending_terminal(&over, 3, now).unwrap());
}

fn handles_creating_sessions_at_once_pass_the_cap_together_never(fixture: &Fixture) {
    let handles = [fixture.open(), fixture.open()];
    let now = now_ms();
    let barrier = std::sync::Barrier::new(handles.len());
    let stored: usize = std::thread::scope(|scope| {
        let creators: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(h, store)| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    (0..10)
                        .filter(|n| {
                            let s = session(&format!("trm-{h}-{n}"), "usr-a", now);
                            store.insert_pending_terminal(&s, 8, now).unwrap()
                        })
                        .count()
                })
            })
            .collect();
        creators.into_iter().map(|c| c.join().unwrap()).sum()
    });
    assert_eq!(stored, 8);
    assert_eq!(handles[1].pending_terminals("usr-a", now).unwrap().len(), 8);
}
