//! The pool's bookkeeping without a server: backoff, which connection takes a session, slots
//! counted and freed, and what a refusal by sshd means.

use super::*;

#[test]
fn backoff_doubles_up_to_the_cap() {
    let settings = PoolSettings::default();
    let waits: Vec<_> = (0..8).map(|n| backoff(&settings, n)).collect();
    assert_eq!(waits[0], Duration::ZERO);
    assert_eq!(waits[1], Duration::from_millis(500));
    assert_eq!(waits[2], Duration::from_secs(1));
    assert_eq!(waits[3], Duration::from_secs(2));
    assert_eq!(waits[5], Duration::from_secs(8));
    assert_eq!(waits[7], Duration::from_secs(8));
    assert_eq!(backoff(&settings, u32::MAX), settings.backoff_max);
}

#[test]
fn defaults_stay_below_sshd_max_sessions() {
    let settings = PoolSettings::default();
    assert_eq!(settings.max_sessions_per_connection, 8);
    assert_eq!(settings.max_connections_per_server, 4);
}

#[test]
fn the_first_connection_is_preferred_while_it_has_room() {
    assert_eq!(place(&[], 4), Placement::Open);
    assert_eq!(place(&[(0, 8)], 4), Placement::Use(0));
    assert_eq!(place(&[(7, 8)], 4), Placement::Use(0));
    // A later connection with room does not win over the first one with room.
    assert_eq!(place(&[(3, 8), (0, 8)], 4), Placement::Use(0));
    assert_eq!(place(&[(8, 8), (2, 8)], 4), Placement::Use(1));
}

#[test]
fn full_connections_open_another_up_to_the_bound_then_wait() {
    assert_eq!(place(&[(8, 8)], 4), Placement::Open);
    assert_eq!(place(&[(8, 8), (8, 8), (8, 8)], 4), Placement::Open);
    assert_eq!(place(&[(8, 8), (8, 8), (8, 8), (8, 8)], 4), Placement::Wait);
    assert_eq!(place(&[(2, 2), (2, 2)], 2), Placement::Wait);
    // A bound of zero still allows one connection.
    assert_eq!(place(&[], 0), Placement::Open);
    assert_eq!(place(&[(1, 1)], 0), Placement::Wait);
}

#[test]
fn a_connection_marked_full_by_sshd_takes_no_more() {
    // sshd refused at 5 open: the limit drops to 5, below the configured 8.
    assert_eq!(place(&[(5, 5)], 1), Placement::Wait);
    assert_eq!(place(&[(5, 5)], 2), Placement::Open);
    assert_eq!(place(&[(4, 5)], 2), Placement::Use(0));
}

#[test]
fn slots_are_counted_and_freed_on_drop() {
    let sessions = Arc::new(Sessions::new(2));
    let freed = Arc::new(Notify::new());
    let take = || {
        sessions.open.fetch_add(1, Ordering::AcqRel);
        SessionSlot {
            sessions: sessions.clone(),
            freed: freed.clone(),
        }
    };
    let first = take();
    let second = take();
    assert_eq!(sessions.load(), (2, 2));
    assert_eq!(place(&[sessions.load()], 1), Placement::Wait);
    drop(first);
    assert_eq!(sessions.load(), (1, 2));
    assert_eq!(place(&[sessions.load()], 1), Placement::Use(0));
    drop(second);
    assert_eq!(sessions.load(), (0, 2));
    // A zero limit is raised to one, so a connection always takes a session.
    assert_eq!(Sessions::new(0).load(), (0, 1));
}

#[test]
fn a_refusal_lowers_the_limit_to_the_other_open_sessions() {
    let sessions = Sessions::new(8);
    sessions.open.store(6, Ordering::Release);
    assert!(sessions.refused());
    assert_eq!(sessions.load(), (6, 5));
    // The refused attempt's slot is freed: the connection is full at 5.
    sessions.open.store(5, Ordering::Release);
    assert_eq!(place(&[sessions.load()], 1), Placement::Wait);
    // Never raised again by a later refusal at a higher count.
    sessions.open.store(7, Ordering::Release);
    assert!(sessions.refused());
    assert_eq!(sessions.load().1, 5);
    // Refused with nothing else open: the limit drops to one, never to zero.
    sessions.open.store(1, Ordering::Release);
    assert!(!sessions.refused());
    assert_eq!(sessions.load(), (1, 1));
}

#[tokio::test]
async fn dropping_a_slot_wakes_a_waiter() {
    let sessions = Arc::new(Sessions::new(1));
    let freed = Arc::new(Notify::new());
    sessions.open.fetch_add(1, Ordering::AcqRel);
    let slot = SessionSlot {
        sessions: sessions.clone(),
        freed: freed.clone(),
    };
    let waiter = freed.notified();
    tokio::pin!(waiter);
    waiter.as_mut().enable();
    drop(slot);
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("the waiter is woken");
    assert_eq!(sessions.load(), (0, 1));
}

#[test]
fn only_open_refusals_mean_full() {
    let refused = |failure| RemoteError::Ssh {
        operation: "opening an exec channel",
        source: russh::Error::ChannelOpenFailure(failure),
    };
    assert!(is_session_refused(&refused(
        russh::ChannelOpenFailure::AdministrativelyProhibited
    )));
    assert!(is_session_refused(&refused(
        russh::ChannelOpenFailure::ResourceShortage
    )));
    assert!(is_session_refused(&refused(
        russh::ChannelOpenFailure::ConnectFailed
    )));
    assert!(!is_session_refused(&refused(
        russh::ChannelOpenFailure::UnknownChannelType
    )));
    assert!(!is_session_refused(&RemoteError::Ssh {
        operation: "exec",
        source: russh::Error::Disconnect,
    }));
}
