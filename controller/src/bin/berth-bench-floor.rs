//! `hack/bench.sh deploy` floor: the least a deployment can cost on this server. Starts an
//! image with raw Docker API calls through an already open SSH tunnel (create, start, inspect
//! for the address) and polls it through a `direct-tcpip` channel until the first 200; prints
//! the milliseconds from the create call to that answer. No Kubernetes, no status, no proxy.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use berth_controller::remote::docker::docker_over_ssh;
use berth_controller::remote::{
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

#[derive(Parser, Debug)]
#[command(about = "Time a raw Docker start through the SSH tunnel until the first 200")]
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
    /// Image to start; it must answer 200 on `path` at `container_port`.
    #[arg(long, default_value = "berth/sample-app:1")]
    image: String,
    /// Docker network the container joins (the edge network Berth uses).
    #[arg(long, default_value = "berth-edge")]
    network: String,
    #[arg(long, default_value_t = 8080)]
    container_port: u16,
    #[arg(long, default_value = "/healthz")]
    path: String,
    /// Measurements to take; one number (ms) is printed per line.
    #[arg(long, default_value_t = 1)]
    runs: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse();
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
    // The tunnel is open before timing starts, as Berth's pooled connection is.
    let connection = pool.connect(&id, &endpoint, &key, None).await?;
    let docker = docker_over_ssh(connection.clone(), &options.remote_socket);
    docker.version().await?;
    for run in 0..options.runs {
        let name = format!("berth-bench-floor-{}-{run}", std::process::id());
        let started = Instant::now();
        let outcome = start_and_poll(&docker, &connection, &options, &name).await;
        let elapsed = started.elapsed();
        let remove = RemoveContainerOptionsBuilder::new().force(true).build();
        docker.remove_container(&name, Some(remove)).await.ok();
        outcome?;
        println!("{}", elapsed.as_millis());
    }
    Ok(())
}

async fn start_and_poll(
    docker: &Docker,
    connection: &ServerConnection,
    options: &Options,
    name: &str,
) -> anyhow::Result<()> {
    let create = CreateContainerOptionsBuilder::new().name(name).build();
    let body = ContainerCreateBody {
        image: Some(options.image.clone()),
        host_config: Some(HostConfig {
            network_mode: Some(options.network.clone()),
            ..Default::default()
        }),
        ..Default::default()
    };
    docker.create_container(Some(create), body).await?;
    docker
        .start_container(name, None::<StartContainerOptions>)
        .await?;
    let inspected = docker
        .inspect_container(name, None::<InspectContainerOptions>)
        .await?;
    let address = inspected
        .network_settings
        .and_then(|n| n.networks)
        .and_then(|mut n| n.remove(&options.network))
        .and_then(|n| n.ip_address)
        .filter(|ip| !ip.is_empty())
        .context("the container has no address on the network")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let request = http::Request::get(&options.path)
            .header(
                http::header::HOST,
                format!("{address}:{}", options.container_port),
            )
            .body(Empty::<Bytes>::new())?;
        let answer = connection
            .send_http_tcp(&address, options.container_port, request)
            .await;
        if matches!(answer, Ok((status, _)) if status == http::StatusCode::OK) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bail!(
        "no 200 from {address}:{} within 30 s",
        options.container_port
    )
}
