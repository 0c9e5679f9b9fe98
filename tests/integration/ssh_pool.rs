//! `ServerConnectionPool` against a private sshd with a low `MaxSessions`: session channels
//! spread over a bounded number of connections, and callers queue beyond the bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_remote::{ClientKey, Endpoint, PoolSettings, ServerConnectionPool, ServerId};
use berth_tests::random_suffix;
use berth_tests::sshd::{TestSshd, new_client_key};
use futures::future::join_all;

const COMMAND: &str = "sleep 1; echo ok";

struct Target {
    pool: Arc<ServerConnectionPool>,
    id: ServerId,
    endpoint: Endpoint,
    key: ClientKey,
    host_key: String,
    _sshd: TestSshd,
}

impl Target {
    /// A private sshd allowing `sshd_max_sessions` per connection, and a pool for it.
    fn start(sshd_max_sessions: u32, settings: PoolSettings) -> Self {
        let keys = std::env::temp_dir().join(format!("berth-test-pool-{}", random_suffix()));
        let (private_key, public_key, _) = new_client_key(&keys, "pool");
        let _ = std::fs::remove_dir_all(&keys);
        let sshd = TestSshd::start_with_max_sessions(&[&public_key], sshd_max_sessions);
        Self {
            pool: Arc::new(ServerConnectionPool::new(settings)),
            id: ServerId {
                namespace: "test".into(),
                name: format!("pool-{}", random_suffix()),
            },
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port: sshd.port,
                username: "root".into(),
            },
            key: ClientKey::parse(private_key.as_bytes()).expect("a usable client key"),
            host_key: sshd.host_key_fingerprint(),
            _sshd: sshd,
        }
    }

    /// Runs `n` copies of [`COMMAND`] at once through the pool; every one must print `ok`.
    async fn run_concurrently(&self, n: usize) -> Duration {
        let started = Instant::now();
        let results = join_all((0..n).map(|_| {
            self.pool.exec(
                &self.id,
                &self.endpoint,
                &self.key,
                Some(&self.host_key),
                COMMAND,
            )
        }))
        .await;
        let elapsed = started.elapsed();
        eprintln!(
            "{n} concurrent execs took {elapsed:?}; connections opened so far: {}",
            self.pool.connections_opened()
        );
        for (index, result) in results.into_iter().enumerate() {
            let output = result.unwrap_or_else(|e| panic!("exec {index} failed: {e}"));
            assert_eq!(output.exit_status, Some(0), "exec {index}: {output:?}");
            assert_eq!(output.stdout_text().trim(), "ok", "exec {index}");
        }
        elapsed
    }
}

fn settings(max_sessions_per_connection: usize, max_connections_per_server: usize) -> PoolSettings {
    PoolSettings {
        max_sessions_per_connection,
        max_connections_per_server,
        ..PoolSettings::default()
    }
}

#[tokio::test]
async fn ssh_pool_spreads_sessions_over_bounded_connections_and_queues() {
    let target = Target::start(2, settings(2, 2));
    // A forwarding-style caller first: it gets the one preferred connection.
    let first = target
        .pool
        .connect(
            &target.id,
            &target.endpoint,
            &target.key,
            Some(&target.host_key),
        )
        .await
        .expect("connect");
    assert_eq!(target.pool.connections_opened(), 1);

    let elapsed = target.run_concurrently(6).await;
    // Two connections of two sessions: six one-second commands take at least two rounds.
    assert_eq!(target.pool.connections_opened(), 2, "elapsed {elapsed:?}");
    assert!(
        elapsed >= Duration::from_millis(1900),
        "six commands on four session slots cannot finish in one round: {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");

    // The preferred connection is still the first one, and nothing more is opened.
    let again = target
        .pool
        .connect(
            &target.id,
            &target.endpoint,
            &target.key,
            Some(&target.host_key),
        )
        .await
        .expect("connect");
    assert!(Arc::ptr_eq(&first, &again));
    target.run_concurrently(4).await;
    assert_eq!(target.pool.connections_opened(), 2);
}

#[tokio::test]
async fn ssh_pool_takes_a_refused_session_as_a_full_connection() {
    // The pool believes in eight sessions per connection; sshd allows two and refuses more
    // ("administratively prohibited"), so the pool must move sessions to new connections.
    let target = Target::start(2, settings(8, 3));
    let elapsed = target.run_concurrently(6).await;
    let opened = target.pool.connections_opened();
    assert!(
        (2..=3).contains(&opened),
        "opened {opened} connections in {elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
}
