//! The behaviour every backend owes the controller and the shim, as one set of tests run on
//! each: on SQLite always, on PostgreSQL when `BERTH_TEST_POSTGRES_URL` names a database
//! (`hack/test.sh` sets it from the local stack). Each PostgreSQL test works in a schema of
//! its own, dropped afterwards, so runs in parallel do not meet.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use berth_crds::deployment::{DeploymentPhase, DeploymentStep};
use berth_crds::progress::{Level, ProgressEvent, Source, StreamStatus};

use super::{HealthObservation, HealthQuery, ObservationStore, StoreLocation, TimelineKey, open};

const POSTGRES_URL: &str = "BERTH_TEST_POSTGRES_URL";

macro_rules! on_both_backends {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $test() {
                super::$test(&super::Fixture::sqlite());
            })*
        }
        mod postgres {
            $(#[test]
            fn $test() {
                if let Some(fixture) = super::Fixture::postgres() {
                    super::$test(&fixture);
                }
            })*
        }
    };
}

// Access-failure evidence, which these macros also run on both backends.
mod access_failures;
// Monitoring samples, likewise.
mod monitoring;
// Removed deployment attempts, likewise.
mod attempts;
// REST writes' audit records, likewise.
mod audit;
// The shim replicas' shared state: pending terminal sessions and login attempts, likewise.
mod login_attempts;
mod terminal_sessions;
// TLS to PostgreSQL as the URL asks (PostgreSQL only).
mod tls;

on_both_backends!(
    timelines_keep_order_per_attempt_and_page_after_a_sequence,
    a_second_handle_sees_what_the_first_wrote_and_pruning_honours_retention,
    attempts_lists_each_attempt_of_a_resource_once_in_order,
    concurrent_writers_and_a_following_reader_agree_on_every_entry,
    stores_opened_at_once_create_the_schema_once,
    health_history_answers_the_latest_of_a_window_oldest_first,
    forgetting_a_resource_removes_its_history_and_no_one_elses,
);

fn event(message: &str) -> ProgressEvent {
    ProgressEvent {
        timestamp: "2026-11-22T06:00:00.000Z".into(),
        source: Source::Platform,
        phase: DeploymentPhase::Detect,
        level: Level::Info,
        message: message.into(),
        deployment_id: "dep-web-1".into(),
        status: StreamStatus::Running,
        step: DeploymentStep {
            current: 1,
            total: 5,
            label: "Detecting".into(),
        },
        stream: None,
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn messages(store: &dyn ObservationStore, key: &TimelineKey) -> Vec<String> {
    let entries = store.read(key, 0, usize::MAX).unwrap();
    entries.into_iter().map(|e| e.event.message).collect()
}

fn timelines_keep_order_per_attempt_and_page_after_a_sequence(fixture: &Fixture) {
    let store = fixture.open();
    let web = TimelineKey::new("org-a", "web", "dep-web-1");
    let other = TimelineKey::new("org-b", "web", "dep-web-1");
    assert!(store.read(&web, 0, 10).unwrap().is_empty());
    assert_eq!(store.count(&web).unwrap(), 0);
    let mut output = event("two");
    output.source = Source::Application;
    store.append(&web, &[event("one"), output.clone()]).unwrap();
    store.append(&other, &[event("elsewhere")]).unwrap();
    store.append(&web, &[event("three")]).unwrap();
    store.append(&web, &[]).unwrap();
    let all = store.read(&web, 0, 100).unwrap();
    assert_eq!(messages(store.as_ref(), &web), ["one", "two", "three"]);
    assert_eq!(
        all[1].event, output,
        "an entry comes back as it was recorded"
    );
    assert!(all.windows(2).all(|w| w[0].sequence < w[1].sequence));
    assert_eq!(store.count(&web).unwrap(), 3);
    assert_eq!(store.count(&other).unwrap(), 1);
    let rest = store.read(&web, all[0].sequence, 1).unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].event.message, "two");
    assert!(store.read(&web, all[2].sequence, 10).unwrap().is_empty());
    assert!(store.read(&web, 0, 0).unwrap().is_empty());
}

fn a_second_handle_sees_what_the_first_wrote_and_pruning_honours_retention(fixture: &Fixture) {
    let store = fixture.open();
    let key = TimelineKey::new("org-a", "web", "dep-web-1");
    store.append(&key, &[event("kept")]).unwrap();
    let reader = fixture.open();
    assert_eq!(messages(reader.as_ref(), &key), ["kept"]);
    assert_eq!(store.prune(Duration::from_secs(3600)).unwrap(), 0);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(store.prune(Duration::ZERO).unwrap(), 1);
    assert_eq!(reader.count(&key).unwrap(), 0);
}

fn attempts_lists_each_attempt_of_a_resource_once_in_order(fixture: &Fixture) {
    let store = fixture.open();
    for (resource, deployment) in [
        ("web", "dep-2"),
        ("web", "dep-1"),
        ("web", "dep-2"),
        ("api", "dep-3"),
    ] {
        let key = TimelineKey::new("org-a", resource, deployment);
        store.append(&key, &[event("step")]).unwrap();
    }
    assert_eq!(store.attempts("org-a", "web").unwrap(), ["dep-1", "dep-2"]);
    assert!(store.attempts("org-b", "web").unwrap().is_empty());
}

fn observation(resource: &str, observed_ms: i64, overall: &str) -> HealthObservation {
    HealthObservation {
        id: 0,
        namespace: "org-a".into(),
        resource: resource.into(),
        observed_ms,
        overall: overall.into(),
        summary: serde_json::json!({ "overall": overall, "at": observed_ms }),
    }
}

fn health_history_answers_the_latest_of_a_window_oldest_first(fixture: &Fixture) {
    let store = fixture.open();
    let now = now_ms();
    let recorded: Vec<_> = [
        (1, "healthy"),
        (2, "unhealthy"),
        (3, "healthy"),
        (4, "healthy"),
    ]
    .into_iter()
    .map(|(minutes_ago, overall)| observation("web", now - minutes_ago * 60_000, overall))
    .collect();
    store.record_health(&recorded).unwrap();
    store
        .record_health(&[observation("api", now, "unknown")])
        .unwrap();
    store.record_health(&[]).unwrap();
    let query = |from_minutes: i64, limit: usize| HealthQuery {
        namespace: "org-a".into(),
        resource: "web".into(),
        from_ms: now - from_minutes * 60_000,
        to_ms: now,
        limit,
    };
    let all = store.health_history(&query(60, 200)).unwrap();
    let times: Vec<_> = all.iter().map(|o| o.observed_ms).collect();
    let mut expected: Vec<_> = recorded.iter().map(|o| o.observed_ms).collect();
    expected.sort();
    assert_eq!(times, expected, "oldest first, only the resource's own");
    assert_eq!(all[2].overall, "unhealthy");
    assert_eq!(all[2].summary["overall"], "unhealthy");
    assert!(all.iter().all(|o| o.id > 0 && o.resource == "web"));
    let latest_two = store.health_history(&query(60, 2)).unwrap();
    assert_eq!(latest_two, all[2..].to_vec(), "a limit keeps the latest");
    let window = store.health_history(&query(2, 200)).unwrap();
    assert_eq!(window.len(), 2, "the window bounds both ends: {window:?}");
    std::thread::sleep(Duration::from_millis(5));
    let pruned = store
        .prune_health_history(Duration::from_secs(150))
        .unwrap();
    assert_eq!(pruned, 2, "observations older than the retention go");
}

/// Two controller replicas (two writers each, as a handover can overlap) append to one
/// timeline while a shim follows it page by page, as it streams build output: the follower
/// must end up with every entry, in the order the store keeps them.
fn concurrent_writers_and_a_following_reader_agree_on_every_entry(fixture: &Fixture) {
    const WRITERS: usize = 2;
    const BATCHES: usize = 40;
    const PER_BATCH: usize = 5;
    let replicas = [fixture.open(), fixture.open()];
    let shim = fixture.open();
    let key = TimelineKey::new("org-a", "web", "dep-web-1");
    let writing = AtomicUsize::new(replicas.len() * WRITERS);
    let followed = std::thread::scope(|scope| {
        for (replica, store) in replicas.iter().enumerate() {
            for writer in 0..WRITERS {
                let (key, writing) = (&key, &writing);
                scope.spawn(move || {
                    let own = TimelineKey::new("org-a", "web", format!("dep-{replica}-{writer}"));
                    for batch in 0..BATCHES {
                        let events: Vec<_> = (0..PER_BATCH)
                            .map(|n| {
                                event(&format!("{replica}/{writer}/{}", batch * PER_BATCH + n))
                            })
                            .collect();
                        store.append(key, &events).unwrap();
                        store.append(&own, &events[..1]).unwrap();
                    }
                    writing.fetch_sub(1, Ordering::SeqCst);
                });
            }
        }
        let (mut after, mut seen) = (0, Vec::new());
        loop {
            let done = writing.load(Ordering::SeqCst) == 0;
            let page = shim.read(&key, after, 16).unwrap();
            if let Some(last) = page.last() {
                after = last.sequence;
            }
            let empty = page.is_empty();
            seen.extend(page.into_iter().map(|entry| entry.sequence));
            if done && empty {
                break seen;
            }
        }
    });
    let stored: Vec<_> = shim.read(&key, 0, usize::MAX).unwrap();
    assert_eq!(stored.len(), replicas.len() * WRITERS * BATCHES * PER_BATCH);
    let sequences: Vec<_> = stored.iter().map(|entry| entry.sequence).collect();
    assert_eq!(
        followed, sequences,
        "the follower missed or repeated entries"
    );
    // Each writer's entries keep the order it recorded them in.
    for replica in 0..replicas.len() {
        for writer in 0..WRITERS {
            let prefix = format!("{replica}/{writer}/");
            let own: Vec<usize> = stored
                .iter()
                .filter_map(|entry| entry.event.message.strip_prefix(&prefix))
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(own, (0..BATCHES * PER_BATCH).collect::<Vec<_>>());
            let mine = TimelineKey::new("org-a", "web", format!("dep-{replica}-{writer}"));
            assert_eq!(shim.count(&mine).unwrap(), BATCHES as i64);
        }
    }
}

/// The controller and the shim (or two replicas) start together on a store nobody created.
fn stores_opened_at_once_create_the_schema_once(fixture: &Fixture) {
    let key = TimelineKey::new("org-a", "web", "dep-web-1");
    std::thread::scope(|scope| {
        let opening: Vec<_> = (0..4)
            .map(|n| {
                let key = &key;
                scope.spawn(move || {
                    let store = fixture.open();
                    store.append(key, &[event(&n.to_string())]).unwrap();
                })
            })
            .collect();
        for handle in opening {
            handle.join().unwrap();
        }
    });
    assert_eq!(fixture.open().count(&key).unwrap(), 4);
}

/// Only PostgreSQL has connections to lose: after the server ends them (a restart, a
/// failover, an idle timeout), calls succeed again on new ones.
#[test]
fn postgres_calls_survive_the_server_closing_their_connections() {
    let Some(fixture) = Fixture::postgres() else {
        return;
    };
    let store = fixture.open();
    let key = TimelineKey::new("org-a", "web", "dep-web-1");
    store.append(&key, &[event("before")]).unwrap();
    let Cleanup::Schema { url, schema } = &fixture.cleanup else {
        unreachable!("a PostgreSQL fixture drops a schema");
    };
    let terminate = format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{schema}'"
    );
    admin(url, &terminate);
    store.append(&key, &[event("after")]).unwrap();
    admin(url, &terminate);
    assert_eq!(messages(store.as_ref(), &key), ["before", "after"]);
}

/// The binaries open the store on a blocking thread and may drop their last handle to it in
/// async code (the shim's state at shutdown): neither may panic.
#[tokio::test]
async fn postgres_stores_open_and_drop_from_async_code() {
    let Some(fixture) = Fixture::postgres() else {
        return;
    };
    let location = fixture.location.clone();
    let store = tokio::task::spawn_blocking(move || open(&location))
        .await
        .unwrap()
        .unwrap();
    let writer = crate::ObservationWriter::start(store.clone()).unwrap();
    let key = TimelineKey::new("org-a", "web", "dep-web-1");
    writer.record(&key, event("queued"));
    writer.flush().await;
    let count = std::sync::Arc::clone(&store);
    let stored = tokio::task::spawn_blocking(move || count.count(&key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored, 1);
    drop(writer);
    drop(store);
}

/// A store location for one test.
struct Fixture {
    location: StoreLocation,
    cleanup: Cleanup,
}

enum Cleanup {
    Directory(#[allow(dead_code)] tempfile::TempDir),
    Schema { url: String, schema: String },
}

impl Fixture {
    fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            location: StoreLocation::Sqlite(dir.path().join("nested/store.sqlite")),
            cleanup: Cleanup::Directory(dir),
        }
    }

    /// A fresh schema in the test database, or `None` (the test is skipped) without one.
    fn postgres() -> Option<Self> {
        let Some(url) = std::env::var(POSTGRES_URL)
            .ok()
            .filter(|url| !url.is_empty())
        else {
            eprintln!("skipped: set {POSTGRES_URL} to run this test on PostgreSQL");
            return None;
        };
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let schema = format!(
            "berth_test_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        admin(&url, &format!("CREATE SCHEMA {schema}"));
        let separator = if url.contains('?') { '&' } else { '?' };
        let location =
            format!("{url}{separator}options=-csearch_path%3D{schema}&application_name={schema}");
        Some(Self {
            location: location.parse().unwrap(),
            cleanup: Cleanup::Schema { url, schema },
        })
    }

    fn open(&self) -> std::sync::Arc<dyn ObservationStore> {
        open(&self.location).unwrap_or_else(|error| panic!("{error}"))
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Self::Schema { url, schema } = self {
            // Never panic here: a failed test is already unwinding through it.
            let _ = try_admin(url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

/// Runs `sql` on a connection of its own to the test database.
fn admin(url: &str, sql: &str) {
    if let Err(error) = try_admin(url, sql) {
        panic!("{sql}: {error}");
    }
}

fn try_admin(url: &str, sql: &str) -> Result<(), tokio_postgres::Error> {
    // A thread of its own: a fixture may be dropped in async code, where nothing may block.
    std::thread::scope(|scope| {
        scope
            .spawn(|| admin_here(url, sql))
            .join()
            .expect("the test's own connection")
    })
}

fn admin_here(url: &str, sql: &str) -> Result<(), tokio_postgres::Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the test's own connection");
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        let connection = tokio::spawn(connection);
        let outcome = client.batch_execute(sql).await;
        drop(client);
        let _ = connection.await;
        outcome
    })
}

fn forgetting_a_resource_removes_its_history_and_no_one_elses(fixture: &Fixture) {
    let store = fixture.open();
    for resource in ["web", "api"] {
        let key = TimelineKey::new("org-a", resource, "dep-1");
        store.append(&key, &[event("step")]).unwrap();
        store
            .record_health(&[observation(resource, now_ms(), "healthy")])
            .unwrap();
    }
    let other = TimelineKey::new("org-b", "web", "dep-1");
    store.append(&other, &[event("step")]).unwrap();
    assert_eq!(store.forget_resource("org-a", "web").unwrap(), 2);
    assert!(store.attempts("org-a", "web").unwrap().is_empty());
    assert_eq!(store.attempts("org-a", "api").unwrap(), ["dep-1"]);
    assert_eq!(store.attempts("org-b", "web").unwrap(), ["dep-1"]);
    let health = |resource: &str| HealthQuery {
        namespace: "org-a".into(),
        resource: resource.into(),
        from_ms: 0,
        to_ms: now_ms() + 1,
        limit: 10,
    };
    assert!(store.health_history(&health("web")).unwrap().is_empty());
    assert_eq!(store.health_history(&health("api")).unwrap().len(), 1);
    assert_eq!(store.forget_resource("org-a", "web").unwrap(), 0);
}
