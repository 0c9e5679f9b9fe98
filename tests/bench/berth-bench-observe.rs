//! `hack/bench.sh observe`: what reading observations through berth-shim costs, each against a
//! baseline measured in the same run (issue 13).
//!
//! It makes a throwaway organization with an owner signed in through the shim, registers the
//! stack's sshd as a server with an edge proxy, and deploys an app built from a local folder
//! that prints `--log-lines` lines (some carrying a secret value, some on stderr) before it
//! serves. Then, in alternating rounds:
//! 1. `GET /resources/{id}/runtime-logs?tailLines=N` on the shim (kept-alive and fresh
//!    connections) against the raw Docker logs call (tail N, timestamps, both streams) through
//!    an SSH tunnel to the same server; p50 of `--runs` each, goal `--logs-goal`.
//! 2. `GET /resources/{id}/health?mode=cached` against `GET /projects` at `--concurrency`,
//!    kept-alive and fresh connections; p99 each, goal `--health-goal`.
//!
//! Everything it made is removed at the end, whether or not a goal was met. Loopback only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_remote::docker::docker_over_ssh;
use berth_remote::{ClientKey, Endpoint, PoolSettings, ServerConnectionPool, ServerId};
use berth_tests::rest::{Reply, Rest, TestOrg};
use bollard::query_parameters::{ListContainersOptionsBuilder, LogsOptionsBuilder};
use clap::Parser;
use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

mod shim_load;
use shim_load::{Rounds, Sample, Sender, ShimAddress, connect, get, print_header, verdict};

#[derive(Parser, Debug)]
#[command(about = "Benchmark runtime logs and cached health on berth-shim against baselines")]
struct Options {
    /// Base URL of the shim's API (loopback only); the fixtures use it too.
    #[arg(long, env = "BERTH_URL", default_value = "http://127.0.0.1:7070/api")]
    url: String,
    /// SSH port of the stack's sshd (the server the app runs on).
    #[arg(long, env = "BERTH_SSH_PORT", default_value_t = 2222)]
    ssh_port: u16,
    /// The stack's client key for that sshd.
    #[arg(long, env = "BERTH_SSH_KEY")]
    ssh_key: PathBuf,
    /// Docker socket on the server.
    #[arg(long, default_value = "/var/run/docker.sock")]
    docker_socket: String,
    /// HTTP port of the benchmark server's edge proxy (HTTPS: the next one).
    #[arg(long, default_value_t = 18960)]
    proxy_port: u16,
    /// Lines the app prints before it serves.
    #[arg(long, default_value_t = 2000)]
    log_lines: usize,
    /// `tailLines` of the runtime-logs read (and `tail` of the raw call).
    #[arg(long, default_value_t = 1000)]
    tail: usize,
    /// Runtime-logs reads per side (alternating).
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Highest shim/raw ratio of the runtime-logs p50s that meets the goal.
    #[arg(long, default_value_t = 1.3)]
    logs_goal: f64,
    /// Requests in flight at once in the health and projects load.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Requests per target and connection kind (split over the rounds).
    #[arg(long, default_value_t = 4000)]
    requests: usize,
    /// Alternating rounds: many short ones, so that a stall of the machine (a burst of work
    /// elsewhere; a round lasts well under a second) falls on every target alike.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Highest health/projects ratio of the p99s that meets the goal.
    #[arg(long, default_value_t = 1.5)]
    health_goal: f64,
}

/// Long enough for a server to come up or a build to finish on two busy cores.
const WAIT: Duration = Duration::from_secs(180);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    let shim = ShimAddress::parse(&options.url)?;
    // The fixtures (berth_tests::rest) read the shim's URL from BERTH_URL.
    ensure!(
        std::env::var("BERTH_URL").ok().as_deref() == Some(options.url.as_str()),
        "set BERTH_URL to the shim's API (the fixtures use it), not --url"
    );
    let client = Client::try_default()
        .await
        .context("a client for the API server (KUBECONFIG, the stack's admin)")?;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await.rest;
    let mut made = Made::default();
    let outcome = run(&options, &client, &org, &owner, &shim, &mut made).await;
    made.remove(&owner).await;
    drop(org);
    outcome
}

async fn run(
    options: &Options,
    client: &Client,
    org: &TestOrg,
    owner: &Rest,
    shim: &ShimAddress,
    made: &mut Made,
) -> anyhow::Result<()> {
    let folder = tempfile::tempdir()?;
    write_app(folder.path(), options.log_lines)?;
    let secret = format!("tok-{}", berth_tests::random_suffix());
    let app = deploy(options, client, org, owner, folder.path(), &secret, made).await?;
    let token = owner.token.clone().context("the owner is signed in")?;
    let mut failed = Vec::new();

    let tunnel = Tunnel::open(options, &org.namespace, &app.id).await?;
    let logs = LogsBench {
        shim,
        token: &token,
        path: format!(
            "{}/resources/{}/runtime-logs?tailLines={}",
            shim.path, app.id, options.tail
        ),
        tunnel: &tunnel,
        tail: options.tail,
    };
    logs.check(&secret).await?;
    if !logs.run(options).await? {
        failed.push("runtime logs");
    }

    let health = format!("{}/resources/{}/health?mode=cached", shim.path, app.id);
    let projects = format!("{}/projects", shim.path);
    if !health_bench(options, shim, &token, &health, &projects).await? {
        failed.push("cached health");
    }
    ensure!(failed.is_empty(), "goal missed: {}", failed.join(", "));
    Ok(())
}

/// What the run made on the server, removed at the end (the organization goes with `TestOrg`).
#[derive(Default)]
struct Made {
    server: Option<String>,
    resource: Option<(String, String)>,
}

impl Made {
    /// Best effort, bounded: the resource, then the server through the API, whose deletion
    /// waits until the resource's containers are gone (delete-safety) and the controller's
    /// finalizer removes the edge proxy.
    async fn remove(&self, owner: &Rest) {
        if let Some((id, slug)) = &self.resource {
            let body = json!({"confirmation": {"resourceSlug": slug}});
            let _ = owner.delete(&format!("/resources/{id}"), body).await;
        }
        if let Some(id) = &self.server {
            let _ = owner
                .post(&format!("/servers/{id}/deactivate"), json!({}))
                .await;
            let body = json!({"confirmation": {"serverId": id}});
            // Delete-safety blockers clear once the resource's deployments are gone.
            let deleted = || async {
                let reply = owner.delete(&format!("/servers/{id}"), body.clone()).await;
                (reply.status == 200).then_some(())
            };
            report_cleanup(wait_until(WAIT, "the server deleted", deleted).await);
        }
    }
}

fn report_cleanup(outcome: anyhow::Result<()>) {
    if let Err(error) = outcome {
        eprintln!("cleanup: {error:#}");
    }
}

/// Polls `check` every 250 ms until it returns `Some`; fails naming `what` after `timeout`.
async fn wait_until<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        ensure!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The body of a 200, or an error naming the request.
fn ok(reply: Reply, what: &str) -> anyhow::Result<Value> {
    ensure!(
        reply.status == 200,
        "{what}: HTTP {}: {}",
        reply.status,
        reply.body
    );
    Ok(reply.body)
}

fn id_of(body: &Value) -> anyhow::Result<String> {
    body["id"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("no id in {body}"))
}

/// The sample app, printing `lines` lines before it serves: every tenth carries the secret (so
/// masking works on the read), every fourth goes to stderr.
fn write_app(folder: &Path, lines: usize) -> anyhow::Result<()> {
    let script = format!(
        r#"i=0
while [ "$i" -lt {lines} ]; do
  i=$((i + 1))
  if [ $((i % 10)) -eq 0 ]; then echo "line $i: signed in to the billing API with token $API_TOKEN"
  elif [ $((i % 4)) -eq 0 ]; then echo "line $i: slow request GET /items/$i took 120 ms" >&2
  else echo "line $i: GET /items/$i 200 OK in 3 ms"; fi
done
exec /bin/sample-app
"#
    );
    std::fs::write(folder.join("start.sh"), script)?;
    let dockerfile =
        "FROM berth/sample-app:1\nCOPY start.sh /start.sh\nCMD [\"/bin/sh\", \"/start.sh\"]\n";
    std::fs::write(folder.join("Dockerfile"), dockerfile)?;
    Ok(())
}

/// The deployed app.
struct App {
    id: String,
}

/// Server, project, environment and the resource with its secret, deployed and healthy.
async fn deploy(
    options: &Options,
    client: &Client,
    org: &TestOrg,
    owner: &Rest,
    folder: &Path,
    secret: &str,
    made: &mut Made,
) -> anyhow::Result<App> {
    let server = create_server(options, owner).await?;
    made.server = Some(server.clone());
    let project = id_of(&ok(
        owner.post("/projects", json!({"name": "Bench"})).await,
        "create a project",
    )?)?;
    let environment = json!({"projectId": project, "name": "prod", "kind": "preview"});
    let environment = id_of(&ok(
        owner.post("/environments", environment).await,
        "create an environment",
    )?)?;
    let slug = format!("obs{}", berth_tests::random_suffix());
    let resource = json!({
        "projectId": project, "environmentId": environment, "name": "Observed", "slug": slug,
        "kind": "application",
        "source": {"kind": "local-folder", "locator": folder.to_str().context("a UTF-8 path")?},
        "networkProfile": {"internalPort": 8080},
        "runtimeProfile": {"healthCheck": {"path": "/healthz", "intervalSeconds": 1, "retries": 2}},
    });
    let id = id_of(&ok(
        owner.post("/resources", resource).await,
        "create a resource",
    )?)?;
    made.resource = Some((id.clone(), slug));
    // No server yet: the secret is in place before the first (and only) deployment.
    let body = json!({"key": "API_TOKEN", "value": secret});
    ok(
        owner.post(&format!("/resources/{id}/secrets"), body).await,
        "set a secret",
    )?;
    let place = json!({ "spec": { "serverId": server } });
    Api::<Resource>::namespaced(client.clone(), &org.namespace)
        .patch(&id, &PatchParams::default(), &Patch::Merge(&place))
        .await
        .context("set the resource's server")?;
    wait_healthy(owner, &id).await?;
    Ok(App { id })
}

/// The stack's sshd as a server with a Caddy edge proxy on `--proxy-port`, ready.
async fn create_server(options: &Options, owner: &Rest) -> anyhow::Result<String> {
    let key = std::fs::read_to_string(&options.ssh_key)
        .with_context(|| format!("reading {}", options.ssh_key.display()))?;
    let credential = json!({"name": "bench key", "kind": "ssh-private-key", "privateKey": key});
    let credential = id_of(&ok(
        owner.post("/credentials/ssh", credential).await,
        "create a credential",
    )?)?;
    let port = options.proxy_port;
    let server = json!({
        "name": "edge", "host": "127.0.0.1", "port": options.ssh_port, "username": "root",
        "credentialId": credential,
        "proxy": {"kind": "caddy", "httpPort": port, "httpsPort": port + 1},
    });
    let id = id_of(&ok(
        owner.post("/servers", server).await,
        "create a server",
    )?)?;
    wait_until(
        WAIT,
        "the server reachable with a ready edge proxy",
        || async {
            let record = owner.get(&format!("/servers/{id}")).await.body;
            (record["reachable"] == true && record["proxy"]["status"] == "ready").then_some(())
        },
    )
    .await?;
    Ok(id)
}

/// Waits until the deployment succeeded and cached health reads healthy.
async fn wait_healthy(owner: &Rest, id: &str) -> anyhow::Result<()> {
    let path = format!("/resources/{id}/health");
    wait_until(WAIT, "the app deployed and healthy", || async {
        let body = owner.get(&path).await.body;
        if body["latestDeployment"]["status"] == "failed" {
            return Some(Err(anyhow::anyhow!("the deployment failed: {body}")));
        }
        (body["overall"] == "healthy").then_some(Ok(()))
    })
    .await?
}

/// The raw side: Berth's SSH pool to the same server and the app's container.
struct Tunnel {
    pool: ServerConnectionPool,
    id: ServerId,
    endpoint: Endpoint,
    key: ClientKey,
    socket: String,
    container: String,
}

impl Tunnel {
    /// Connects once (the shim's connection is open too) and finds the running container.
    async fn open(options: &Options, namespace: &str, resource: &str) -> anyhow::Result<Self> {
        let key_bytes = std::fs::read(&options.ssh_key)
            .with_context(|| format!("reading {}", options.ssh_key.display()))?;
        let mut tunnel = Self {
            pool: ServerConnectionPool::new(PoolSettings::default()),
            id: ServerId {
                namespace: "bench".into(),
                name: "observe".into(),
            },
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port: options.ssh_port,
                username: "root".into(),
            },
            key: ClientKey::parse(&key_bytes)?,
            socket: options.docker_socket.clone(),
            container: String::new(),
        };
        tunnel.container = tunnel.running_container(namespace, resource).await?;
        Ok(tunnel)
    }

    async fn docker(&self) -> anyhow::Result<bollard::Docker> {
        let connection = self
            .pool
            .connect(&self.id, &self.endpoint, &self.key, None)
            .await?;
        Ok(docker_over_ssh(connection, &self.socket))
    }

    async fn running_container(&self, namespace: &str, resource: &str) -> anyhow::Result<String> {
        let filters = HashMap::from([(
            "label".to_string(),
            vec![
                format!("berth.dev/namespace={namespace}"),
                format!("berth.dev/resource={resource}"),
            ],
        )]);
        let options = ListContainersOptionsBuilder::new()
            .filters(&filters)
            .build();
        let running = self.docker().await?.list_containers(Some(options)).await?;
        ensure!(running.len() == 1, "{} running containers", running.len());
        running[0].id.clone().context("a container id")
    }

    /// The raw call: Docker's logs, tail `tail`, timestamps on, both streams, read to the end
    /// (from asking the pool for the connection, as the shim does per request). Returns lines.
    async fn logs(&self, tail: usize) -> anyhow::Result<usize> {
        let options = LogsOptionsBuilder::new()
            .stdout(true)
            .stderr(true)
            .timestamps(true)
            .tail(&tail.to_string())
            .build();
        let docker = self.docker().await?;
        let mut output = docker.logs(&self.container, Some(options));
        let mut lines = 0;
        while let Some(chunk) = output.next().await {
            lines += chunk?.as_ref().iter().filter(|b| **b == b'\n').count();
        }
        Ok(lines)
    }
}

/// Runtime logs through the shim against the raw Docker call.
struct LogsBench<'a> {
    shim: &'a ShimAddress,
    token: &'a str,
    path: String,
    tunnel: &'a Tunnel,
    tail: usize,
}

impl LogsBench<'_> {
    /// Both sides return the whole tail, and the shim's has the secret masked and never shown.
    async fn check(&self, secret: &str) -> anyhow::Result<()> {
        let tail = self.tail;
        let raw = wait_until(WAIT, &format!("{tail} lines in the app's logs"), || async {
            let lines = self.tunnel.logs(tail).await.ok()?;
            (lines >= tail).then_some(lines)
        })
        .await?;
        ensure!(raw == tail, "the raw call read {raw} lines");
        let mut sender = connect(self.shim).await?;
        let body = get(&mut sender, self.shim, &self.path, self.token).await?;
        ensure!(
            !String::from_utf8_lossy(&body).contains(secret),
            "the secret value came back unmasked"
        );
        let body: Value = serde_json::from_slice(&body)?;
        let logs = body["logs"].as_array().context("logs[]")?;
        ensure!(logs.len() == tail, "the shim returned {} lines", logs.len());
        let masked = logs.iter().filter(|l| l["masked"] == true).count();
        let stderr = logs.iter().filter(|l| l["stream"] == "stderr").count();
        ensure!(masked > 0 && stderr > 0, "{masked} masked, {stderr} stderr");
        println!(
            "runtime logs: {tail} lines per read ({masked} masked, {stderr} on stderr), \
             {} bytes of JSON from the shim",
            serde_json::to_vec(&body)?.len()
        );
        Ok(())
    }

    /// `--runs` reads per side, alternating raw, kept-alive, fresh; prints p50s and ratios.
    async fn run(&self, options: &Options) -> anyhow::Result<bool> {
        let mut raw = Vec::new();
        let mut kept = Vec::new();
        let mut fresh = Vec::new();
        let mut sender = connect(self.shim).await?;
        // Warm-up: the shim's SSH connection and caches, the pool's connection.
        self.tunnel.logs(self.tail).await?;
        get(&mut sender, self.shim, &self.path, self.token).await?;
        for _ in 0..options.runs.max(1) {
            raw.push(timed(self.tunnel.logs(self.tail)).await?);
            kept.push(timed(self.shim_read(&mut sender)).await?);
            let mut new = connect(self.shim).await?;
            let started = Instant::now();
            self.shim_read(&mut new).await?;
            // Fresh: the TCP connect is part of what a new client pays.
            fresh.push(started.elapsed());
        }
        let (raw, kept, fresh) = (Sample::of(raw), Sample::of(kept), Sample::of(fresh));
        println!(
            "\n1. runtime logs, tailLines={}: {} alternating reads each",
            self.tail, options.runs
        );
        print_header();
        raw.print("raw Docker logs through the SSH tunnel");
        kept.print("shim runtime-logs, kept-alive connection");
        fresh.print("shim runtime-logs, fresh connections");
        let kept_ratio = kept.p50() / raw.p50();
        let fresh_ratio = fresh.p50() / raw.p50();
        Ok(verdict(
            &format!("shim/raw p50: kept-alive {kept_ratio:.2}x, fresh {fresh_ratio:.2}x"),
            kept_ratio.max(fresh_ratio),
            options.logs_goal,
        ))
    }

    async fn shim_read(&self, sender: &mut Sender) -> anyhow::Result<usize> {
        let body = get(sender, self.shim, &self.path, self.token).await?;
        Ok(body.len())
    }
}

async fn timed<T>(call: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    call.await?;
    Ok(started.elapsed())
}

/// Cached health against the projects list under the same load, in alternating rounds.
async fn health_bench(
    options: &Options,
    shim: &ShimAddress,
    token: &str,
    health: &str,
    projects: &str,
) -> anyhow::Result<bool> {
    let targets = [
        ("health", health.to_string()),
        ("projects", projects.to_string()),
    ];
    let mut samples = Rounds {
        shim: shim.clone(),
        token: token.to_string(),
        concurrency: options.concurrency,
        requests: options.requests,
        rounds: options.rounds,
    }
    .run(&targets)
    .await?;
    println!(
        "\n2. cached health against GET /projects: concurrency {}, {} alternating rounds",
        options.concurrency, options.rounds
    );
    print_header();
    let mut worst: f64 = 0.0;
    let mut ratios = Vec::new();
    for (fresh, kind) in [(false, "kept-alive"), (true, "fresh")] {
        let health = Sample::of(samples.remove(&("health", fresh)).unwrap_or_default());
        let projects = Sample::of(samples.remove(&("projects", fresh)).unwrap_or_default());
        health.print(&format!("health?mode=cached, {kind}"));
        projects.print(&format!("projects, {kind}"));
        let ratio = health.p99() / projects.p99();
        ratios.push(format!("{kind} {ratio:.2}x"));
        worst = worst.max(ratio);
    }
    Ok(verdict(
        &format!("health/projects p99: {}", ratios.join(", ")),
        worst,
        options.health_goal,
    ))
}
