//! Terminal sessions on both backends: pending, then opened, closing and closed.

use super::Fixture;
use crate::{PendingTerminal, TerminalClaim, TerminalState, now_ms};

on_both_backends!(
    a_session_is_taken_once_by_its_ticket_or_its_creator_and_a_wrong_claim_takes_nothing,
    of_two_handles_racing_for_a_session_exactly_one_gets_it,
    an_expired_session_is_neither_listed_nor_taken_and_pruning_removes_it,
    a_user_gets_no_more_pending_sessions_than_the_cap,
    handles_creating_sessions_at_once_pass_the_cap_together_never,
    a_taken_session_is_opened_until_its_lease_lapses,
    a_session_closed_while_it_waits_is_recorded_closed_and_cannot_be_taken,
    an_opened_session_moves_forward_only_and_a_closed_one_is_not_renewed,
    pruning_removes_opened_sessions_closed_or_lapsed_before_the_cutoff,
);

const CONNECT_WITHIN_MS: i64 = 60_000;
/// How long a taken session's lease runs before its replica renews it.
const LEASE_MS: i64 = 15_000;

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
            .take_pending_terminal("trm-1", ticket("sha256:forged"), now, now + LEASE_MS)
            .unwrap(),
        None
    );
    assert_eq!(
        other
            .take_pending_terminal("trm-2", ticket("sha256:trm-1"), now, now + LEASE_MS)
            .unwrap(),
        None,
        "a ticket opens its own session only"
    );
    for claim in [
        creator("usr-b", "sess-usr-a"),
        creator("usr-a", "sess-other"),
    ] {
        assert_eq!(
            other
                .take_pending_terminal("trm-2", claim, now, now + LEASE_MS)
                .unwrap(),
            None
        );
    }
    let taken = other
        .take_pending_terminal("trm-1", ticket("sha256:trm-1"), now, now + LEASE_MS)
        .unwrap();
    assert_eq!(taken, Some(by_ticket), "comes back as it was stored");
    assert_eq!(
        store
            .take_pending_terminal("trm-1", ticket("sha256:trm-1"), now, now + LEASE_MS)
            .unwrap(),
        None,
        "single use"
    );
    let claim = creator("usr-a", "sess-usr-a");
    assert_eq!(
        store
            .take_pending_terminal("trm-2", claim, now, now + LEASE_MS)
            .unwrap(),
        Some(by_creator)
    );
    assert_eq!(
        store
            .take_pending_terminal("trm-2", claim, now, now + LEASE_MS)
            .unwrap(),
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
                            .take_pending_terminal(id, ticket(digest), now, now + LEASE_MS)
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
            .take_pending_terminal("trm-old", ticket("sha256:trm-old"), now, now + LEASE_MS)
            .unwrap(),
        None
    );
    // Expiry is exclusive: at its instant the session is gone.
    let at_expiry = current.expires_ms;
    assert_eq!(
        store
            .take_pending_terminal(
                "trm-new",
                ticket("sha256:trm-new"),
                at_expiry,
                at_expiry + LEASE_MS
            )
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
            .take_pending_terminal("trm-0", claim, now, now + LEASE_MS)
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

fn opened_ids(store: &dyn crate::ObservationStore, user: &str, now: i64) -> Vec<String> {
    let opened = store.opened_terminals(user, now).unwrap();
    opened.into_iter().map(|s| s.id).collect()
}

fn a_taken_session_is_opened_until_its_lease_lapses(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    let older = session("trm-1", "usr-a", now);
    let newer = session("trm-2", "usr-a", now + 1);
    for s in [&older, &newer] {
        assert!(store.insert_pending_terminal(s, 16, now).unwrap());
    }
    let lease = now + LEASE_MS;
    let claim = ticket("sha256:trm-1");
    assert!(
        store
            .take_pending_terminal("trm-1", claim, now, lease)
            .unwrap()
            .is_some()
    );
    let claim = creator("usr-a", "sess-usr-a");
    assert!(
        store
            .take_pending_terminal("trm-2", claim, now, lease)
            .unwrap()
            .is_some()
    );
    // Another replica's handle sees both, newest first, as they were created.
    let other = fixture.open();
    assert_eq!(opened_ids(other.as_ref(), "usr-a", now), ["trm-2", "trm-1"]);
    assert!(other.opened_terminals("usr-b", now).unwrap().is_empty());
    let taken = other.opened_terminal("trm-1", "usr-a").unwrap().unwrap();
    assert_eq!(
        (
            taken.state,
            taken.created_ms,
            taken.lease_ms,
            taken.ended_ms
        ),
        (TerminalState::Active, now, lease, None)
    );
    assert_eq!(taken.detail, older.detail);
    assert_eq!(other.opened_terminal("trm-1", "usr-b").unwrap(), None);
    // A renewed lease keeps a session listed; one its replica stopped renewing lapses.
    let later = lease + 1;
    assert_eq!(
        store.renew_terminal("trm-2", later + LEASE_MS).unwrap(),
        Some(TerminalState::Active)
    );
    assert_eq!(opened_ids(other.as_ref(), "usr-a", later), ["trm-2"]);
    assert_eq!(store.renew_terminal("trm-none", later).unwrap(), None);
}

fn a_session_closed_while_it_waits_is_recorded_closed_and_cannot_be_taken(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    let waiting = session("trm-1", "usr-a", now);
    assert!(store.insert_pending_terminal(&waiting, 16, now).unwrap());
    // Only its creator closes it.
    assert_eq!(
        store.close_pending_terminal("trm-1", "usr-b", now).unwrap(),
        None
    );
    let other = fixture.open();
    assert_eq!(
        other.close_pending_terminal("trm-1", "usr-a", now).unwrap(),
        Some(waiting)
    );
    assert_eq!(
        store.close_pending_terminal("trm-1", "usr-a", now).unwrap(),
        None
    );
    assert!(store.pending_terminals("usr-a", now).unwrap().is_empty());
    let claim = ticket("sha256:trm-1");
    assert_eq!(
        store
            .take_pending_terminal("trm-1", claim, now, now + LEASE_MS)
            .unwrap(),
        None
    );
    let closed = store.opened_terminal("trm-1", "usr-a").unwrap().unwrap();
    assert_eq!(
        (closed.state, closed.ended_ms),
        (TerminalState::Closed, Some(now))
    );
    assert!(store.opened_terminals("usr-a", now).unwrap().is_empty());
}

fn an_opened_session_moves_forward_only_and_a_closed_one_is_not_renewed(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    assert!(
        store
            .insert_pending_terminal(&session("trm-1", "usr-a", now), 16, now)
            .unwrap()
    );
    let claim = ticket("sha256:trm-1");
    let lease = now + LEASE_MS;
    store
        .take_pending_terminal("trm-1", claim, now, lease)
        .unwrap()
        .unwrap();
    let state = |store: &dyn crate::ObservationStore| {
        let opened = store.opened_terminal("trm-1", "usr-a").unwrap().unwrap();
        (opened.state, opened.ended_ms)
    };
    assert!(
        !store
            .advance_terminal("trm-1", TerminalState::Active, now)
            .unwrap()
    );
    // Another replica asks for it to close; the replica bridging it learns so as it renews.
    let other = fixture.open();
    assert!(
        other
            .advance_terminal("trm-1", TerminalState::Closing, now)
            .unwrap()
    );
    assert!(
        !other
            .advance_terminal("trm-1", TerminalState::Closing, now)
            .unwrap()
    );
    assert_eq!(
        store.renew_terminal("trm-1", lease + 1).unwrap(),
        Some(TerminalState::Closing)
    );
    assert_eq!(
        opened_ids(store.as_ref(), "usr-a", now),
        ["trm-1"],
        "closing is listed"
    );
    assert!(
        store
            .advance_terminal("trm-1", TerminalState::Closed, now + 5)
            .unwrap()
    );
    assert_eq!(
        state(other.as_ref()),
        (TerminalState::Closed, Some(now + 5))
    );
    // Closed stays closed, at its first end.
    assert!(
        !store
            .advance_terminal("trm-1", TerminalState::Closed, now + 9)
            .unwrap()
    );
    assert!(
        !store
            .advance_terminal("trm-1", TerminalState::Closing, now + 9)
            .unwrap()
    );
    assert_eq!(
        state(store.as_ref()),
        (TerminalState::Closed, Some(now + 5))
    );
    assert_eq!(store.renew_terminal("trm-1", lease + 2).unwrap(), None);
    assert!(store.opened_terminals("usr-a", now).unwrap().is_empty());
}

fn pruning_removes_opened_sessions_closed_or_lapsed_before_the_cutoff(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    for id in ["trm-closed", "trm-lapsed", "trm-live"] {
        assert!(
            store
                .insert_pending_terminal(&session(id, "usr-a", now), 16, now)
                .unwrap()
        );
        let digest = format!("sha256:{id}");
        let claim = ticket(&digest);
        store
            .take_pending_terminal(id, claim, now, now + LEASE_MS)
            .unwrap()
            .unwrap();
    }
    assert!(
        store
            .advance_terminal("trm-closed", TerminalState::Closed, now)
            .unwrap()
    );
    let later = now + LEASE_MS + 1_000;
    assert_eq!(
        store.renew_terminal("trm-live", later + LEASE_MS).unwrap(),
        Some(TerminalState::Active)
    );
    // Nothing ended before `now`: nothing goes.
    assert_eq!(store.prune_opened_terminals(now).unwrap(), 0);
    assert_eq!(store.prune_opened_terminals(later).unwrap(), 2);
    assert_eq!(store.opened_terminal("trm-closed", "usr-a").unwrap(), None);
    assert_eq!(store.opened_terminal("trm-lapsed", "usr-a").unwrap(), None);
    assert_eq!(opened_ids(store.as_ref(), "usr-a", later), ["trm-live"]);
}
