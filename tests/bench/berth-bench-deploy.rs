//! `hack/bench.sh deploy`: time from creating a Resource to the first 200 through the edge
//! proxy, against a floor measured in the same run, alternating: the same image started with raw
//! Docker API calls through an already open SSH tunnel, polled through a `direct-tcpip` channel
//! until the first 200 (no Kubernetes, no status, no proxy). Both sides start timing on an
//! already connected client, so neither pays a process start or a login.

mod deploy_steps;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use berth_crds::resource::{Resource, ResourceSpec};
use berth_observations::{ObservationStore, TimelineKey};
use berth_remote::docker::docker_over_ssh;
use berth_remote::{
    ClientKey, Endpoint, PoolSettings, ServerConnection, ServerConnectionPool, ServerId,
};
use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectContainerOptions, RemoveContainerOptionsBuilder,
    StartContainerOptions,
};
use bytes::Bytes;
use clap::Parser;
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

const POLL: Duration = Duration::from_millis(20);
const DEADLINE: Duration = Duration::from_secs(60);

#[derive(Parser, Debug)]
#[command(about = "Time Resource creation until the first 200 through the edge proxy, and a floor")]
struct Options {
    /// Namespace holding a Ready Server `--server` with a Caddy edge proxy on `--proxy-port`.
    #[arg(long)]
    namespace: String,
    #[arg(long, default_value = "local")]
    server: String,
    /// HTTP port of the server's edge proxy (on 127.0.0.1).
    #[arg(long)]
    proxy_port: u16,
    /// SSH host of the server, for the floor.
    #[arg(long, env = "BERTH_SSH_HOST", default_value = "127.0.0.1")]
    host: String,
    #[arg(long, env = "BERTH_SSH_PORT", default_value_t = 2222)]
    port: u16,
    #[arg(long, env = "BERTH_SSH_USER", default_value = "root")]
    user: String,
    #[arg(long, env = "BERTH_SSH_KEY")]
    key: PathBuf,
    #[arg(long, default_value = "/var/run/docker.sock")]
    remote_socket: String,
    /// Image both sides start; it answers 200 on /healthz and / at port 8080.
    #[arg(long, default_value = "berth/sample-app:1")]
    image: String,
    #[arg(long, default_value = "berth-edge")]
    network: String,
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Exit non-zero when the ratio of the p50s is above this.
    #[arg(long, default_value_t = 1.1)]
    goal: f64,
    /// Exit non-zero when the ratio of the p99s is above this.
    #[arg(long, default_value_t = 1.3)]
    goal_p99: f64,
    /// Print the figures beside the goals without judging them (hack/test.sh's report line:
    /// a debug controller on a busy CI machine).
    #[arg(long)]
    report: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    let client = Client::try_default().await?;
    let resources = Api::<Resource>::namespaced(client, &options.namespace);
    resources.list(&Default::default()).await?;
    let floor = Floor::connect(&options).await?;
    let store = deploy_steps::open_store()?;
    let mut berth_ms = Vec::new();
    let mut floor_ms = Vec::new();
    let mut steps = Vec::new();
    for run in 0..options.runs {
        let name = format!("b{run}");
        let (elapsed, breakdown) = berth_run(&resources, &store, &options, &name).await?;
        berth_ms.push(elapsed);
        steps.push(breakdown);
        floor_ms.push(floor.run(&options, run).await?);
    }
    let (berth_p50, floor_p50) = (percentile(&berth_ms, 50), percentile(&floor_ms, 50));
    let (berth_p99, floor_p99) = (percentile(&berth_ms, 99), percentile(&floor_ms, 99));
    let ratio = berth_p50 as f64 / floor_p50.max(1) as f64;
    let ratio_p99 = berth_p99 as f64 / floor_p99.max(1) as f64;
    println!("runs: {}", options.runs);
    println!(
        "berth create → first 200 through the proxy:  p50 {berth_p50} ms, p99 {berth_p99} ms (all: {berth_ms:?})"
    );
    println!(
        "floor raw Docker API via tunnel → first 200: p50 {floor_p50} ms, p99 {floor_p99} ms (all: {floor_ms:?})"
    );
    let judged = if options.report {
        "report only; the release bench's goal"
    } else {
        "goal"
    };
    println!("ratio p50: {ratio:.2}x ({judged} <= {}x)", options.goal);
    println!(
        "ratio p99: {ratio_p99:.2}x ({judged} <= {}x)",
        options.goal_p99
    );
    deploy_steps::print(&steps);
    let missed = ratio > options.goal || ratio_p99 > options.goal_p99;
    if missed && !options.report {
        bail!(
            "Berth is {ratio:.2}x (p50) and {ratio_p99:.2}x (p99) the floor; goals {}x and {}x",
            options.goal,
            options.goal_p99
        );
    }
    Ok(())
}

/// The `p`th percentile of `samples` (nearest rank; with few runs, p99 is the slowest).
fn percentile(samples: &[u128], p: usize) -> u128 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// Creates a Resource, times it until the proxy answers 200 for its host, reads where the time
/// went from its attempt's timeline, deletes it and waits until it is gone (containers and route
/// removed by the controller's finalizer).
async fn berth_run(
    resources: &Api<Resource>,
    store: &Arc<dyn ObservationStore>,
    options: &Options,
    name: &str,
) -> anyhow::Result<(u128, deploy_steps::Breakdown)> {
    let spec: ResourceSpec = serde_json::from_value(json!({
        "projectId": "prj-bench", "environmentId": "env-bench", "serverId": options.server,
        "name": name, "kind": "application",
        "source": { "kind": "docker-image", "locator": options.image },
        "runtimeProfile": { "healthCheck": { "path": "/healthz" } },
        "networkProfile": { "internalPort": 8080 },
    }))?;
    let created_ms = epoch_ms();
    let started = Instant::now();
    resources
        .create(&PostParams::default(), &Resource::new(name, spec))
        .await?;
    let host = format!("{name}.localhost");
    while proxy_status(options.proxy_port, &host).await != Some(200) {
        if started.elapsed() > DEADLINE {
            bail!("{host} did not answer 200 within {DEADLINE:?}");
        }
        tokio::time::sleep(POLL).await;
    }
    let elapsed = started.elapsed().as_millis();
    let key = TimelineKey {
        namespace: options.namespace.clone(),
        resource: name.to_string(),
        deployment: format!("dep-{name}-1"),
    };
    let served_ms = created_ms + i64::try_from(elapsed)?;
    let breakdown = deploy_steps::breakdown(store, key, created_ms, served_ms).await?;
    resources.delete(name, &DeleteParams::default()).await?;
    let gone = Instant::now();
    while resources.get_opt(name).await?.is_some() {
        if gone.elapsed() > DEADLINE {
            bail!("Resource {name} was not deleted within {DEADLINE:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok((elapsed, breakdown))
}

fn epoch_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// Status of `GET /` for `host` through the edge proxy, on a new connection as a client makes.
async fn proxy_status(port: u16, host: &str) -> Option<u16> {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(connection);
    let request = http::Request::get("/")
        .header(http::header::HOST, host)
        .body(Empty::<Bytes>::new())
        .ok()?;
    let response = sender.send_request(request).await.ok()?;
    Some(response.status().as_u16())
}

/// The floor's side: an open SSH connection and Docker through it.
struct Floor {
    connection: std::sync::Arc<ServerConnection>,
    docker: Docker,
}

impl Floor {
    async fn connect(options: &Options) -> anyhow::Result<Self> {
        let key_bytes = std::fs::read(&options.key)
            .with_context(|| format!("reading {}", options.key.display()))?;
        let key = ClientKey::parse(&key_bytes)?;
        let pool = ServerConnectionPool::new(PoolSettings::default());
        let id = ServerId {
            namespace: "bench".into(),
            name: "floor".into(),
        };
        let endpoint = Endpoint {
            host: options.host.clone(),
            port: options.port,
            username: options.user.clone(),
        };
        let connection = pool.connect(&id, &endpoint, &key, None).await?;
        let docker = docker_over_ssh(connection.clone(), &options.remote_socket);
        docker.version().await?;
        Ok(Self { connection, docker })
    }

    /// One measurement: create and start the container, then poll it until 200.
    async fn run(&self, options: &Options, run: usize) -> anyhow::Result<u128> {
        let name = format!("berth-bench-floor-{}-{run}", std::process::id());
        let started = Instant::now();
        let outcome = self.start_and_poll(options, &name).await;
        let elapsed = started.elapsed().as_millis();
        let remove = RemoveContainerOptionsBuilder::new().force(true).build();
        self.docker.remove_container(&name, Some(remove)).await.ok();
        outcome.map(|()| elapsed)
    }

    async fn start_and_poll(&self, options: &Options, name: &str) -> anyhow::Result<()> {
        let create = CreateContainerOptionsBuilder::new().name(name).build();
        let body = ContainerCreateBody {
            image: Some(options.image.clone()),
            host_config: Some(HostConfig {
                network_mode: Some(options.network.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        self.docker.create_container(Some(create), body).await?;
        self.docker
            .start_container(name, None::<StartContainerOptions>)
            .await?;
        let inspected = self
            .docker
            .inspect_container(name, None::<InspectContainerOptions>)
            .await?;
        let address = inspected
            .network_settings
            .and_then(|n| n.networks)
            .and_then(|mut n| n.remove(&options.network))
            .and_then(|n| n.ip_address)
            .filter(|ip| !ip.is_empty())
            .context("the container has no address on the network")?;
        let started = Instant::now();
        while started.elapsed() < DEADLINE {
            let request = http::Request::get("/healthz")
                .header(http::header::HOST, format!("{address}:8080"))
                .body(Empty::<Bytes>::new())?;
            let answer = self.connection.send_http_tcp(&address, 8080, request).await;
            if matches!(answer, Ok((status, _)) if status == http::StatusCode::OK) {
                return Ok(());
            }
            tokio::time::sleep(POLL).await;
        }
        bail!("no 200 from {address}:8080 within {DEADLINE:?}")
    }
}
