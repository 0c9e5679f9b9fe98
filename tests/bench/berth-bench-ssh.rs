//! `hack/bench.sh ssh`: Docker API calls through `ServerConnectionPool` against one server, to
//! show that concurrent calls share one SSH connection and what the tunnel costs per call.
//!
//! One run measures, with the same bollard `version` call:
//! - a cold burst of `--concurrency` calls through the pool, counting the SSH connections the pool
//!   opened and the TCP connections this process holds to the server's port;
//! - latency through the tunnel and on the local Docker socket, one call at a time and in bursts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use berth_remote::docker::docker_over_ssh;
use berth_remote::{ClientKey, Endpoint, PoolSettings, ServerConnectionPool, ServerId};
use bollard::{API_DEFAULT_VERSION, Docker};
use clap::Parser;
use futures::future::join_all;

#[derive(Parser, Debug)]
#[command(about = "Benchmark Docker API calls over Berth's SSH connection pool")]
struct Options {
    /// SSH host of the server.
    #[arg(long, env = "BERTH_SSH_HOST", default_value = "127.0.0.1")]
    host: String,
    /// SSH port of the server.
    #[arg(long, env = "BERTH_SSH_PORT", default_value_t = 2222)]
    port: u16,
    /// Login name.
    #[arg(long, env = "BERTH_SSH_USER", default_value = "root")]
    user: String,
    /// Private key file.
    #[arg(long, env = "BERTH_SSH_KEY")]
    key: PathBuf,
    /// Docker socket on the server (reached through the tunnel).
    #[arg(long, default_value = "/var/run/docker.sock")]
    remote_socket: String,
    /// Docker socket on this machine (the baseline).
    #[arg(
        long,
        env = "BERTH_DOCKER_SOCKET",
        default_value = "/var/run/docker.sock"
    )]
    local_socket: String,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Bursts of `concurrency` calls per transport after the cold one.
    #[arg(long, default_value_t = 5)]
    bursts: usize,
    /// Calls made one at a time per transport.
    #[arg(long, default_value_t = 200)]
    sequential: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    let key_bytes = std::fs::read(&options.key)
        .with_context(|| format!("reading {}", options.key.display()))?;
    let key = ClientKey::parse(&key_bytes)?;
    let pool = Arc::new(ServerConnectionPool::new(PoolSettings::default()));
    let id = ServerId {
        namespace: "bench".into(),
        name: "server".into(),
    };
    let endpoint = Endpoint {
        host: options.host.clone(),
        port: options.port,
        username: options.user.clone(),
    };
    let tunnel = Tunnel {
        pool: pool.clone(),
        id,
        endpoint,
        key,
        socket: options.remote_socket.clone(),
    };

    // Cold burst: every call asks the pool for the connection at the same moment.
    let cold = burst(options.concurrency, || tunnel.version()).await?;
    let opened = pool.connections_opened();
    let established = established_connections_to(options.port)?;

    let local = Docker::connect_with_unix(&options.local_socket, 30, API_DEFAULT_VERSION)?;
    let local_version = || {
        let local = local.clone();
        async move {
            let started = Instant::now();
            local.version().await?;
            Ok(started.elapsed())
        }
    };
    let mut tunnel_burst = Vec::new();
    let mut local_burst = Vec::new();
    for _ in 0..options.bursts {
        tunnel_burst.extend(burst(options.concurrency, || tunnel.version()).await?);
        local_burst.extend(burst(options.concurrency, local_version).await?);
    }
    let mut tunnel_seq = Vec::new();
    let mut local_seq = Vec::new();
    for _ in 0..options.sequential {
        tunnel_seq.push(tunnel.version().await?);
        local_seq.push(local_version().await?);
    }

    println!(
        "server {}:{} as {}, remote socket {}, local socket {}",
        options.host, options.port, options.user, options.remote_socket, options.local_socket
    );
    println!(
        "cold burst: {} concurrent Docker `version` calls, all succeeded; SSH connections opened \
         by the pool: {opened}; TCP connections from this process to port {}: {established}",
        cold.len(),
        options.port
    );
    println!(
        "{:<44} {:>8} {:>10} {:>10}",
        "latency of Docker `version`", "calls", "p50", "p99"
    );
    report("tunnel, one at a time", tunnel_seq);
    report("local socket, one at a time", local_seq);
    report(
        &format!("tunnel, bursts of {}", options.concurrency),
        tunnel_burst,
    );
    report(
        &format!("local socket, bursts of {}", options.concurrency),
        local_burst,
    );
    let burst = cold.len();
    report("tunnel, cold burst (includes SSH login)", cold);
    println!("SSH connections for a cold burst of {burst} calls: {opened} opened (goal: 1)");
    if opened != 1 || established != 1 {
        bail!("expected exactly one SSH connection, got {opened} opened and {established} open");
    }
    Ok(())
}

/// The pool, a server and its Docker socket.
struct Tunnel {
    pool: Arc<ServerConnectionPool>,
    id: ServerId,
    endpoint: Endpoint,
    key: ClientKey,
    socket: String,
}

impl Tunnel {
    /// One Docker `version` call through the pool, timed from asking for the connection.
    async fn version(&self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let connection = self
            .pool
            .connect(&self.id, &self.endpoint, &self.key, None)
            .await?;
        docker_over_ssh(connection, &self.socket).version().await?;
        Ok(started.elapsed())
    }
}

/// Runs `n` calls at once; fails if any failed.
async fn burst<F, Fut>(n: usize, call: F) -> anyhow::Result<Vec<Duration>>
where
    F: Fn() -> Fut,
    Fut: Future<Output = anyhow::Result<Duration>>,
{
    join_all((0..n).map(|_| call())).await.into_iter().collect()
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| {
        let index = ((samples.len() as f64 * q).ceil() as usize).saturating_sub(1);
        samples[index.min(samples.len() - 1)]
    };
    println!(
        "{label:<44} {:>8} {:>8.2}ms {:>8.2}ms",
        samples.len(),
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3
    );
}

/// Established TCP connections this process holds to `port`, from `/proc` (an independent
/// count, not the pool's own).
fn established_connections_to(port: u16) -> anyhow::Result<usize> {
    let mut inodes = std::collections::HashSet::new();
    for fd in std::fs::read_dir("/proc/self/fd")? {
        let Ok(target) = std::fs::read_link(fd?.path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if let Some(inode) = target
            .strip_prefix("socket:[")
            .and_then(|rest| rest.strip_suffix(']'))
        {
            inodes.insert(inode.to_string());
        }
    }
    let port = format!("{port:04X}");
    let mut count = 0;
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(state), Some(inode)) =
                (fields.get(2), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let established = *state == "01";
            if established && remote.ends_with(&format!(":{port}")) && inodes.contains(*inode) {
                count += 1;
            }
        }
    }
    Ok(count)
}
