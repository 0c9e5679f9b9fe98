//! The list's filters, what show and close decide, and closes run against a real (SQLite)
//! store: a waiting session, one bridged here, one bridged by another replica, one whose
//! replica died.

use std::path::PathBuf;

use berth_api::terminal::{TerminalScopeKind, Transport};
use berth_observations::SqliteStore;

use super::*;
use crate::services::terminals::TerminalSessionStatus;
use crate::services::terminals::pending::{Claim, Creator};

const ORG: &str = "org-a";
const OWNER: Owner<'static> = Owner {
    user_id: "usr-a",
    namespace: Some(ORG),
};

fn listed(id: &str, scope: &str, created_at: &str) -> ListedSession {
    ListedSession {
        session_id: id.into(),
        scope: scope.into(),
        server_id: "srv-1".into(),
        resource_id: (scope == "resource").then(|| "res-1".into()),
        deployment_id: (scope == "resource").then(|| "dep-1".into()),
        dependency_resource_id: (scope == "dependency").then(|| "dep-db".into()),
        transport: Transport {
            kind: "websocket".into(),
            path: format!("/api/terminal-sessions/{id}/ws"),
        },
        provider_key: "generic-ssh".into(),
        working_directory: None,
        status: TerminalSessionStatus::Active,
        created_at: created_at.into(),
    }
}

fn waiting(id: &str, scope: &str, created_at: &str) -> Pending {
    Pending {
        namespace: ORG.into(),
        server_id: "srv-1".into(),
        rows: 24,
        cols: 80,
        directory: None,
        container: None,
        listed: listed(id, scope, created_at),
    }
}

fn with_server(mut pending: Pending, server: &str) -> Pending {
    pending.listed.server_id = server.into();
    pending
}

fn in_org(mut pending: Pending, namespace: &str) -> Pending {
    pending.namespace = namespace.into();
    pending
}

fn ids(listed: &[ListedSession]) -> Vec<&str> {
    listed.iter().map(|s| s.session_id.as_str()).collect()
}

/// Sessions of every kind, newest first by id: `trm-5` is the newest.
fn sessions() -> Vec<Pending> {
    vec![
        waiting("trm-1", "server", "2030-01-01T00:00:01Z"),
        with_server(waiting("trm-2", "server", "2030-01-01T00:00:02Z"), "srv-2"),
        waiting("trm-3", "resource", "2030-01-01T00:00:03Z"),
        waiting("trm-4", "dependency", "2030-01-01T00:00:04Z"),
        in_org(waiting("trm-5", "server", "2030-01-01T00:00:05Z"), "org-b"),
    ]
}

fn selected(filters: TerminalSessionFilters) -> Vec<String> {
    let listed = select(&OWNER, sessions(), &filters);
    ids(&listed).into_iter().map(str::to_string).collect()
}

#[test]
fn the_list_is_the_owners_organization_newest_first() {
    assert_eq!(
        selected(TerminalSessionFilters::default()),
        ["trm-4", "trm-3", "trm-2", "trm-1"]
    );
    let elsewhere = Owner {
        user_id: "usr-a",
        namespace: Some("org-b"),
    };
    let listed = select(&elsewhere, sessions(), &TerminalSessionFilters::default());
    assert_eq!(ids(&listed), ["trm-5"]);
    let nowhere = Owner {
        user_id: "usr-a",
        namespace: None,
    };
    assert!(select(&nowhere, sessions(), &TerminalSessionFilters::default()).is_empty());
}

#[test]
fn each_filter_narrows_the_list() {
    let filters = |f: fn(&mut TerminalSessionFilters)| {
        let mut filters = TerminalSessionFilters::default();
        f(&mut filters);
        selected(filters)
    };
    assert_eq!(
        filters(|f| f.scope = Some(TerminalScopeKind::Server)),
        ["trm-2", "trm-1"]
    );
    assert_eq!(
        filters(|f| f.scope = Some(TerminalScopeKind::Dependency)),
        ["trm-4"]
    );
    assert!(filters(|f| f.scope = Some(TerminalScopeKind::Sandbox)).is_empty());
    assert_eq!(filters(|f| f.server_id = Some("srv-2".into())), ["trm-2"]);
    assert_eq!(filters(|f| f.resource_id = Some("res-1".into())), ["trm-3"]);
    assert!(filters(|f| f.resource_id = Some("res-2".into())).is_empty());
    assert_eq!(
        filters(|f| f.deployment_id = Some("dep-1".into())),
        ["trm-3"]
    );
    assert!(filters(|f| f.sandbox_id = Some("sbx-1".into())).is_empty());
    assert_eq!(filters(|f| f.limit = Some(2)), ["trm-4", "trm-3"]);
    // Filters combine.
    assert_eq!(
        filters(|f| {
            f.scope = Some(TerminalScopeKind::Server);
            f.server_id = Some("srv-1".into());
        }),
        ["trm-1"]
    );
    assert!(
        filters(|f| {
            f.scope = Some(TerminalScopeKind::Server);
            f.resource_id = Some("res-1".into());
        })
        .is_empty()
    );
}

#[test]
fn newest_first_is_by_time_not_by_text() {
    // As text, `01.5Z` sorts after `01.52Z`.
    let sessions = vec![
        waiting("trm-a", "server", "2030-01-01T00:00:01.5Z"),
        waiting("trm-b", "server", "2030-01-01T00:00:01.52Z"),
        waiting("trm-c", "server", "2030-01-01T00:00:01Z"),
    ];
    let listed = select(&OWNER, sessions, &TerminalSessionFilters::default());
    assert_eq!(ids(&listed), ["trm-b", "trm-a", "trm-c"]);
}

#[test]
fn the_default_limit_is_appaloft_s() {
    let many: Vec<Pending> = (0..60)
        .map(|n| {
            waiting(
                &format!("trm-{n:02}"),
                "server",
                &format!("2030-01-01T00:00:{n:02}Z"),
            )
        })
        .collect();
    let listed = select(&OWNER, many, &TerminalSessionFilters::default());
    assert_eq!(listed.len(), DEFAULT_LIMIT);
    assert_eq!(listed[0].session_id, "trm-59");
}

#[test]
fn a_session_seen_waiting_and_opened_is_listed_once_as_opened() {
    let mut opened = waiting("trm-1", "server", "2030-01-01T00:00:01Z");
    opened.listed.status = TerminalSessionStatus::Closing;
    let both = vec![opened, waiting("trm-1", "server", "2030-01-01T00:00:01Z")];
    let listed = select(&OWNER, both, &TerminalSessionFilters::default());
    assert_eq!(ids(&listed), ["trm-1"]);
    assert_eq!(listed[0].status, TerminalSessionStatus::Closing);
}

fn opened(state: TerminalState, lease_ms: i64) -> Opened {
    let mut pending = waiting("trm-1", "server", "2030-01-01T00:00:01Z");
    if state != TerminalState::Active {
        pending.listed.status = TerminalSessionStatus::Closing;
    }
    Opened {
        pending,
        state,
        lease_ms,
    }
}

#[test]
fn show_shows_a_waiting_or_running_session_of_the_owners_organization_only() {
    let now = 1_000;
    let show = |found: Found| shown(&OWNER, Some(found), now).map(|s| s.status);
    let active = TerminalSessionStatus::Active;
    let closing = TerminalSessionStatus::Closing;
    assert_eq!(
        show(Found::Pending(waiting("trm-1", "server", "t"))),
        Some(active)
    );
    assert_eq!(
        show(Found::Opened(opened(TerminalState::Active, now + 1))),
        Some(active)
    );
    assert_eq!(
        show(Found::Opened(opened(TerminalState::Closing, now + 1))),
        Some(closing)
    );
    assert_eq!(
        show(Found::Opened(opened(TerminalState::Closed, now + 1))),
        None
    );
    assert_eq!(
        show(Found::Opened(opened(TerminalState::Active, now))),
        None,
        "lapsed"
    );
    let theirs = in_org(waiting("trm-1", "server", "t"), "org-b");
    assert_eq!(show(Found::Pending(theirs)), None);
    assert_eq!(shown(&OWNER, None, now), None);
}

#[test]
fn close_decides_by_where_the_session_is() {
    let now = 1_000;
    let step = |found: Option<Found>| close_step(&OWNER, found.as_ref(), now);
    assert_eq!(step(None), CloseStep::NotFound);
    let theirs = in_org(waiting("trm-1", "server", "t"), "org-b");
    assert_eq!(step(Some(Found::Pending(theirs))), CloseStep::NotFound);
    let mut theirs = opened(TerminalState::Active, now + 1);
    theirs.pending.namespace = "org-b".into();
    assert_eq!(step(Some(Found::Opened(theirs))), CloseStep::NotFound);
    let mine = waiting("trm-1", "server", "t");
    assert_eq!(step(Some(Found::Pending(mine))), CloseStep::ClosePending);
    for state in [TerminalState::Active, TerminalState::Closing] {
        let running = opened(state, now + 1);
        assert_eq!(step(Some(Found::Opened(running))), CloseStep::AskBridge);
        let lapsed = opened(state, now);
        assert_eq!(step(Some(Found::Opened(lapsed))), CloseStep::RecordClosed);
    }
    for lease in [now - 1, now + 1] {
        let closed = opened(TerminalState::Closed, lease);
        assert_eq!(step(Some(Found::Opened(closed))), CloseStep::AlreadyClosed);
    }
}

/// A SQLite store of its own, removed when dropped.
struct TestStore {
    store: Arc<dyn ShimStore>,
    dir: PathBuf,
}

impl TestStore {
    fn new() -> Self {
        let suffix: u64 = rand::random();
        let dir = std::env::temp_dir().join(format!("berth-terminal-lifecycle-{suffix:x}"));
        let store = SqliteStore::open(&dir.join("observations.sqlite")).unwrap();
        Self {
            store: Arc::new(store),
            dir,
        }
    }

    /// Creates session `id` of usr-a in org-a, waiting for its WebSocket.
    async fn create(&self, id: &str) {
        let now = berth_observations::now_ms();
        let creator = Creator {
            user_id: "usr-a".into(),
            login_session_id: "sess-a".into(),
            created_ms: now,
        };
        let session = waiting(id, "server", "2030-01-01T00:00:01Z");
        let record = pending::record(id, &creator, "btt_ticket", &session).unwrap();
        pending::insert(&self.store, record).await.unwrap();
    }

    /// Creates session `id` and takes it, as its WebSocket does.
    async fn connect(&self, id: &str) {
        self.create(id).await;
        let claim = Claim::Creator {
            user_id: "usr-a".into(),
            login_session_id: "sess-a".into(),
        };
        let taken = pending::take(&self.store, id, claim).await.unwrap();
        assert!(taken.is_some(), "{id} taken");
    }

    async fn state(&self, id: &str) -> Option<TerminalState> {
        let opened = opened::find(&self.store, id, "usr-a").await.unwrap();
        opened.map(|opened| opened.state)
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Bridges session `id` on `terminals` until a close is asked for, then ends it as the
/// WebSocket's task does; resolves when it has.
fn bridge_until_closed(
    terminals: &Arc<Terminals>,
    store: &Arc<dyn ShimStore>,
    id: &str,
) -> tokio::task::JoinHandle<()> {
    let bridged = terminals.bridge(store, id);
    tokio::spawn(async move {
        bridged.close_asked().await;
        bridged.closing();
        drop(bridged);
    })
}

#[tokio::test]
async fn closing_a_waiting_session_closes_it_for_good_and_again_answers_the_same() {
    let t = TestStore::new();
    let terminals = Terminals::default();
    t.create("trm-1").await;
    assert_eq!(
        show(&t.store, &OWNER, "trm-1").await.unwrap().session_id,
        "trm-1"
    );
    let elsewhere = Owner {
        user_id: "usr-a",
        namespace: Some("org-b"),
    };
    let stranger = Owner {
        user_id: "usr-b",
        namespace: Some(ORG),
    };
    for other in [&elsewhere, &stranger] {
        let refused = close(&t.store, &terminals, other, "trm-1")
            .await
            .unwrap_err();
        assert_eq!(refused.status.as_u16(), 404);
        assert_eq!(
            show(&t.store, other, "trm-1")
                .await
                .unwrap_err()
                .status
                .as_u16(),
            404
        );
    }
    close(&t.store, &terminals, &OWNER, "trm-1").await.unwrap();
    assert_eq!(t.state("trm-1").await, Some(TerminalState::Closed));
    // Its WebSocket can no longer take it.
    let claim = Claim::Creator {
        user_id: "usr-a".into(),
        login_session_id: "sess-a".into(),
    };
    assert!(
        pending::take(&t.store, "trm-1", claim)
            .await
            .unwrap()
            .is_none()
    );
    close(&t.store, &terminals, &OWNER, "trm-1").await.unwrap();
    assert_eq!(
        show(&t.store, &OWNER, "trm-1")
            .await
            .unwrap_err()
            .status
            .as_u16(),
        404
    );
    let filters = TerminalSessionFilters::default();
    assert!(list(&t.store, &OWNER, &filters).await.unwrap().is_empty());
    let unknown = close(&t.store, &terminals, &OWNER, "trm-none")
        .await
        .unwrap_err();
    assert_eq!(unknown.status.as_u16(), 404);
}

#[tokio::test]
async fn closing_a_session_bridged_here_ends_its_bridge_before_answering() {
    let t = TestStore::new();
    let terminals = Arc::new(Terminals::default());
    t.connect("trm-1").await;
    let bridge = bridge_until_closed(&terminals, &t.store, "trm-1");
    let listed = list(&t.store, &OWNER, &TerminalSessionFilters::default())
        .await
        .unwrap();
    assert_eq!(ids(&listed), ["trm-1"]);
    assert_eq!(listed[0].status, TerminalSessionStatus::Active);
    let started = tokio::time::Instant::now();
    close(&t.store, &terminals, &OWNER, "trm-1").await.unwrap();
    assert!(bridge.is_finished(), "the bridge ended before the answer");
    assert!(started.elapsed() < RENEW_EVERY, "{:?}", started.elapsed());
    assert_eq!(t.state("trm-1").await, Some(TerminalState::Closed));
    assert!(!terminals.close_here("trm-1"), "no longer bridged");
    close(&t.store, &terminals, &OWNER, "trm-1").await.unwrap();
    let listed = list(&t.store, &OWNER, &TerminalSessionFilters::default())
        .await
        .unwrap();
    assert!(listed.is_empty(), "{listed:?}");
}

#[tokio::test]
async fn closing_a_session_bridged_by_another_replica_reaches_it_through_the_store() {
    let t = TestStore::new();
    let here = Arc::new(Terminals::default());
    let there = Arc::new(Terminals::default());
    t.connect("trm-1").await;
    let bridge = bridge_until_closed(&there, &t.store, "trm-1");
    close(&t.store, &here, &OWNER, "trm-1").await.unwrap();
    assert!(
        bridge.is_finished(),
        "the other replica's bridge ended before the answer"
    );
    assert_eq!(t.state("trm-1").await, Some(TerminalState::Closed));
    close(&t.store, &here, &OWNER, "trm-1").await.unwrap();
}

#[tokio::test]
async fn a_session_whose_replica_died_is_recorded_closed() {
    let t = TestStore::new();
    let terminals = Terminals::default();
    t.create("trm-1").await;
    // Taken by a replica that never renewed its lease.
    let now = berth_observations::now_ms();
    let claim = berth_observations::TerminalClaim::Creator {
        user_id: "usr-a",
        login_session_id: "sess-a",
    };
    t.store
        .take_pending_terminal("trm-1", claim, now, now - 1)
        .unwrap()
        .unwrap();
    assert_eq!(
        show(&t.store, &OWNER, "trm-1")
            .await
            .unwrap_err()
            .status
            .as_u16(),
        404
    );
    close(&t.store, &terminals, &OWNER, "trm-1").await.unwrap();
    assert_eq!(t.state("trm-1").await, Some(TerminalState::Closed));
}

#[tokio::test]
async fn a_bridge_that_ends_by_itself_is_recorded_closed() {
    let t = TestStore::new();
    let terminals = Arc::new(Terminals::default());
    t.connect("trm-1").await;
    let bridged = terminals.bridge(&t.store, "trm-1");
    bridged.closing();
    drop(bridged);
    let mut state = None;
    for _ in 0..50 {
        state = t.state("trm-1").await;
        if state == Some(TerminalState::Closed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state, Some(TerminalState::Closed));
    close(&t.store, &terminals, &OWNER, "trm-1").await.unwrap();
}
