//! `hack/bench.sh shim`: latency and throughput of `GET /api/projects` (served from the shim's
//! cache) against the same LIST sent straight to the API server, in one run.
//!
//! It makes a fresh organization with `--projects` projects and an owner who signs in through
//! the shim, then sends `--requests` requests per target at `--concurrency`, in alternating
//! rounds so both targets see the same machine load, and removes what it made. Loopback only.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use berth_apiserver_shim::auth::password;
use berth_apiserver_shim::domain::accounts::password_secret_name;
use berth_crds::member::{Member, MemberSpec, OrganizationRole};
use berth_crds::organization::{Organization, OrganizationSpec};
use berth_crds::project::{Project, ProjectSpec};
use berth_crds::user::{User, UserSpec};
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client};

#[derive(Parser, Debug)]
#[command(about = "Benchmark GET /api/projects on berth-shim against a LIST on the API server")]
struct Options {
    /// Base URL of the shim's API (loopback only).
    #[arg(long, env = "BERTH_URL", default_value = "http://127.0.0.1:7070/api")]
    url: String,
    /// Projects in the benchmark organization.
    #[arg(long, default_value_t = 100)]
    projects: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Requests per target (split over the rounds).
    #[arg(long, default_value_t = 4000)]
    requests: usize,
    /// Alternating rounds (shim, API server, shim, …).
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// Stop a target's round after this many seconds even if requests remain.
    #[arg(long, default_value_t = 60)]
    round_seconds: u64,
    /// Fail unless the API server's p99 is at least this many times the shim's.
    #[arg(long, default_value_t = 2.0)]
    goal: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse();
    let shim = ShimAddress::parse(&options.url)?;
    let client = Client::try_default()
        .await
        .context("a client for the API server (KUBECONFIG, the stack's admin)")?;
    let fixture = Fixture::create(&client, &options).await?;
    let outcome = run(&options, &client, &shim, &fixture).await;
    fixture.delete(&client).await;
    outcome
}

async fn run(
    options: &Options,
    client: &Client,
    shim: &ShimAddress,
    fixture: &Fixture,
) -> anyhow::Result<()> {
    let token = login(shim, &fixture.email, &fixture.password).await?;
    let shim_path = format!("{}/projects?limit={}", shim.path, options.projects);
    let list_path = format!(
        "/apis/berth.dev/v1alpha1/namespaces/{}/projects",
        fixture.namespace
    );
    // The shim's cache may lag the creates by a moment.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let body = shim_get(shim, &shim_path, &token).await?;
        let total = serde_json::from_slice::<serde_json::Value>(&body)?["total"].clone();
        if total == options.projects {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the shim never listed all projects"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = api_get(client, &list_path).await?;
    let items = serde_json::from_slice::<serde_json::Value>(&listed)?["items"]
        .as_array()
        .map_or(0, Vec::len);
    ensure!(items == options.projects, "the API server listed {items}");

    let shim_target = Target::Shim {
        address: shim.clone(),
        path: shim_path,
        token: token.clone(),
    };
    let api_target = Target::ApiServer {
        client: client.clone(),
        path: list_path,
    };
    // Warm-up: connections, caches, the API server's watch cache.
    measure(
        &shim_target,
        options.concurrency,
        options.concurrency * 2,
        30,
    )
    .await?;
    measure(
        &api_target,
        options.concurrency,
        options.concurrency * 2,
        30,
    )
    .await?;

    let per_round = options.requests.div_ceil(options.rounds.max(1));
    let mut results: BTreeMap<&str, Sample> = BTreeMap::new();
    for _ in 0..options.rounds.max(1) {
        for (name, target) in [("shim", &shim_target), ("api", &api_target)] {
            let round = measure(
                target,
                options.concurrency,
                per_round,
                options.round_seconds,
            )
            .await?;
            results.entry(name).or_default().absorb(round);
        }
    }

    // The session ends with the run.
    let mut sender = connect(shim).await?;
    let logout = format!("{}/auth/logout", shim.path);
    send(
        &mut sender,
        shim,
        "POST",
        &logout,
        Some(&token),
        Some(serde_json::json!({})),
    )
    .await?;

    let shim_result = &results["shim"];
    let api_result = &results["api"];
    println!(
        "GET {} projects, concurrency {}, {} alternating rounds",
        options.projects, options.concurrency, options.rounds
    );
    println!(
        "{:<46} {:>8} {:>10} {:>10} {:>12}",
        "target", "requests", "p50", "p99", "throughput"
    );
    shim_result.print("berth-shim  GET /api/projects?limit=N");
    api_result.print("API server  LIST berth.dev/v1alpha1 projects");
    let ratio = |api: f64, shim: f64| if shim > 0.0 { api / shim } else { 0.0 };
    let p99_ratio = ratio(api_result.quantile(0.99), shim_result.quantile(0.99));
    println!(
        "shim vs API server: p50 {:.1}x faster, p99 {:.1}x faster, throughput {:.1}x",
        ratio(api_result.quantile(0.50), shim_result.quantile(0.50)),
        p99_ratio,
        ratio(shim_result.throughput(), api_result.throughput()),
    );
    if p99_ratio < options.goal {
        bail!(
            "goal missed: the shim's p99 must be at least {}x faster",
            options.goal
        );
    }
    println!("goal met: p99 at least {}x faster", options.goal);
    Ok(())
}

/// Latencies and wall time of one or more rounds.
#[derive(Default)]
struct Sample {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Sample {
    fn absorb(&mut self, other: Sample) {
        self.latencies.extend(other.latencies);
        self.elapsed += other.elapsed;
        self.latencies.sort();
    }

    /// Seconds at quantile `q`.
    fn quantile(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let index = ((self.latencies.len() as f64 * q).ceil() as usize).saturating_sub(1);
        self.latencies[index.min(self.latencies.len() - 1)].as_secs_f64()
    }

    /// Requests per second.
    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    fn print(&self, label: &str) {
        println!(
            "{label:<46} {:>8} {:>8.2}ms {:>8.2}ms {:>8.0} req/s",
            self.latencies.len(),
            self.quantile(0.50) * 1e3,
            self.quantile(0.99) * 1e3,
            self.throughput()
        );
    }
}

/// What one request goes to.
enum Target {
    Shim {
        address: ShimAddress,
        path: String,
        token: String,
    },
    ApiServer {
        client: Client,
        path: String,
    },
}

/// `requests` requests from `concurrency` workers; stops early after `seconds`.
async fn measure(
    target: &Target,
    concurrency: usize,
    requests: usize,
    seconds: u64,
) -> anyhow::Result<Sample> {
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let workers = (0..concurrency).map(|_| {
        let next = next.clone();
        async move {
            let mut latencies = Vec::new();
            let mut connection = None;
            while next.fetch_add(1, Ordering::Relaxed) < requests && Instant::now() < deadline {
                let begun = Instant::now();
                match target {
                    Target::Shim {
                        address,
                        path,
                        token,
                    } => {
                        if connection.is_none() {
                            connection = Some(connect(address).await?);
                        }
                        let sender = connection.as_mut().expect("connected");
                        let body = send(sender, address, "GET", path, Some(token), None).await?;
                        ensure!(!body.is_empty(), "empty response");
                    }
                    Target::ApiServer { client, path } => {
                        api_get(client, path).await?;
                    }
                }
                latencies.push(begun.elapsed());
            }
            anyhow::Ok(latencies)
        }
    });
    let mut sample = Sample::default();
    for latencies in futures::future::join_all(workers).await {
        sample.latencies.extend(latencies?);
    }
    sample.elapsed = started.elapsed();
    sample.latencies.sort();
    Ok(sample)
}

/// Host, port and base path of the shim's URL.
#[derive(Clone)]
struct ShimAddress {
    authority: String,
    path: String,
}

impl ShimAddress {
    fn parse(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .context("the shim's URL must be http:// on loopback")?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        ensure!(
            matches!(host, "127.0.0.1" | "localhost" | "[::1]"),
            "benchmarks run against loopback only, not {host}"
        );
        Ok(Self {
            authority: authority.to_string(),
            path: format!("/{}", path.trim_end_matches('/')),
        })
    }
}

type Sender = http1::SendRequest<Full<Bytes>>;

/// One keep-alive HTTP/1.1 connection to the shim.
async fn connect(address: &ShimAddress) -> anyhow::Result<Sender> {
    let stream = tokio::net::TcpStream::connect(&address.authority).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

async fn send(
    sender: &mut Sender,
    address: &ShimAddress,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
) -> anyhow::Result<Bytes> {
    sender.ready().await?;
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", &address.authority);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = match body {
        Some(value) => {
            request = request.header("content-type", "application/json");
            Full::new(Bytes::from(serde_json::to_vec(&value)?))
        }
        None => Full::new(Bytes::new()),
    };
    let response = sender.send_request(request.body(body)?).await?;
    let status = response.status();
    let bytes = response.into_body().collect().await?.to_bytes();
    ensure!(status.is_success(), "{method} {path}: HTTP {status}");
    Ok(bytes)
}

async fn shim_get(address: &ShimAddress, path: &str, token: &str) -> anyhow::Result<Bytes> {
    let mut sender = connect(address).await?;
    send(&mut sender, address, "GET", path, Some(token), None).await
}

async fn api_get(client: &Client, path: &str) -> anyhow::Result<Bytes> {
    let request = hyper::Request::get(path).body(kube::client::Body::empty())?;
    let response = client.send(request).await?;
    let status = response.status();
    let bytes = response.into_body().collect_bytes().await?;
    ensure!(status.is_success(), "GET {path}: HTTP {status}");
    Ok(bytes)
}

/// Signs in through the shim; the session token never leaves this process.
async fn login(address: &ShimAddress, email: &str, password: &str) -> anyhow::Result<String> {
    let mut sender = connect(address).await?;
    let path = format!("{}/auth/login", address.path);
    let body = serde_json::json!({"email": email, "password": password, "clientKind": "bench"});
    let reply = send(&mut sender, address, "POST", &path, None, Some(body)).await?;
    let reply: serde_json::Value = serde_json::from_slice(&reply)?;
    reply["token"]
        .as_str()
        .map(str::to_string)
        .context("login returned no token")
}

/// The benchmark organization, its owner and projects.
struct Fixture {
    organization: String,
    namespace: String,
    user_id: String,
    email: String,
    password: String,
}

impl Fixture {
    async fn create(client: &Client, options: &Options) -> anyhow::Result<Self> {
        let suffix = berth_apiserver_shim::token::new_id("bench");
        let organization = suffix.clone();
        let organizations = Api::<Organization>::all(client.clone());
        organizations
            .create(
                &PostParams::default(),
                &Organization::new(
                    &organization,
                    OrganizationSpec {
                        name: format!("Benchmark {suffix}"),
                        slug: organization.clone(),
                        logo_url: None,
                        variables: Vec::new(),
                    },
                ),
            )
            .await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let namespace = loop {
            let status = organizations.get(&organization).await?.status;
            if let Some(namespace) = status.and_then(|s| s.namespace) {
                break namespace;
            }
            ensure!(
                Instant::now() < deadline,
                "berth-controller did not provision the organization's namespace"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let user_id = format!("usr-{suffix}");
        let email = format!("{suffix}@bench.berth.local");
        let password = password::generate();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(password_secret_name(&user_id)),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "hash".to_string(),
                ByteString(password::hash(&password).into_bytes()),
            )])),
            ..Default::default()
        };
        Api::<Secret>::namespaced(client.clone(), berth_crds::SYSTEM_NAMESPACE)
            .create(&PostParams::default(), &secret)
            .await?;
        let user = User::new(
            &user_id,
            UserSpec {
                email: email.clone(),
                display_name: Some("Benchmark".into()),
                avatar_url: None,
                password_secret_ref: Some(password_secret_name(&user_id)),
            },
        );
        Api::<User>::all(client.clone())
            .create(&PostParams::default(), &user)
            .await?;
        let member = Member::new(
            &format!("mem-{suffix}"),
            MemberSpec {
                user_id: user_id.clone(),
                email: email.clone(),
                role: OrganizationRole::Owner,
                active: true,
            },
        );
        Api::<Member>::namespaced(client.clone(), &namespace)
            .create(&PostParams::default(), &member)
            .await?;
        let projects = Api::<Project>::namespaced(client.clone(), &namespace);
        for n in 0..options.projects {
            let project = Project::new(
                &format!("prj-bench-{n:03}"),
                ProjectSpec {
                    name: format!("Project {n}"),
                    slug: Some(format!("project-{n}")),
                    description: Some("benchmark fixture".into()),
                    display_order: n as i64,
                    archived: false,
                    archive_reason: None,
                    variables: Vec::new(),
                },
            );
            projects.create(&PostParams::default(), &project).await?;
        }
        Ok(Self {
            organization,
            namespace,
            user_id,
            email,
            password,
        })
    }

    /// Best effort: the organization (its namespace goes with it), the user and its secret.
    async fn delete(&self, client: &Client) {
        let background = DeleteParams::background();
        let _ = Api::<Organization>::all(client.clone())
            .delete(&self.organization, &background)
            .await;
        let _ = Api::<User>::all(client.clone())
            .delete(&self.user_id, &background)
            .await;
        let _ = Api::<Secret>::namespaced(client.clone(), berth_crds::SYSTEM_NAMESPACE)
            .delete(&password_secret_name(&self.user_id), &background)
            .await;
    }
}
