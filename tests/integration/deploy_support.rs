//! Helpers the REST resource and deployment-stream tests share: a server with its own edge
//! proxy registered through the API, requests through that proxy, Docker lookups, and the
//! secret scan of response bodies and logs.

use std::time::Duration;

use berth_tests::eventually;
use berth_tests::rest::{Rest, transcript};
use rand::Rng;
use serde_json::{Value, json};

use crate::shim_servers::{create_credential, stack_key};

/// Long enough for a server to come up or an attempt to finish on two busy cores.
pub const WAIT: Duration = Duration::from_secs(120);

/// Registers the stack's sshd as a server with a Caddy edge proxy on a random loopback port
/// (a range the other deployment tests do not use) and waits until it is ready. Returns
/// `(server id, proxy HTTP port)`.
pub async fn ready_server(admin: &Rest) -> (String, u16) {
    let credential = create_credential(admin, &stack_key()).await;
    let http_port: u16 = 20100 + rand::rng().random_range(0..800);
    let ssh_port: u16 = berth_tests::stack_env("BERTH_SSH_PORT").parse().unwrap();
    let body = json!({
        "name": "edge", "host": berth_tests::stack_env("BERTH_SSH_HOST"), "port": ssh_port, "username": "root",
        "credentialId": credential,
        "proxy": {"kind": "caddy", "httpPort": http_port, "httpsPort": http_port + 1000},
    });
    let id = admin.post("/servers", body).await.ok()["id"]
        .as_str()
        .expect("a server id")
        .to_string();
    eventually(WAIT, "server reachable with a ready edge proxy", || async {
        let record = admin.get(&format!("/servers/{id}")).await.ok();
        (record["reachable"] == true && record["proxy"]["status"] == "ready").then_some(())
    })
    .await;
    (id, http_port)
}

/// Deactivates and deletes a server through the API once its resources are gone, then waits
/// until its edge proxy container is removed, so a test leaves no proxy behind.
pub async fn remove_server(admin: &Rest, id: &str) {
    admin
        .post(&format!("/servers/{id}/deactivate"), json!({}))
        .await
        .ok();
    let body = json!({"confirmation": {"serverId": id}});
    // Delete-safety blockers clear once the resources' finalizers removed their deployments.
    eventually(WAIT, &format!("server {id} deleted"), || async {
        let reply = admin.delete(&format!("/servers/{id}"), body.clone()).await;
        (reply.status == 200).then_some(())
    })
    .await;
    let filter = format!("name=berth-edge-proxy.*{id}");
    eventually(WAIT, &format!("edge proxy of {id} removed"), || {
        let filter = filter.clone();
        async move { docker_names(&filter).is_empty().then_some(()) }
    })
    .await;
}

/// GET `/` for `host` through the edge proxy on `port`: (status, body).
pub async fn fetch(http: &reqwest::Client, port: u16, host: &str) -> Option<(u16, String)> {
    let response = http
        .get(format!("http://127.0.0.1:{port}/"))
        .header("Host", host)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.text().await.ok()?))
}

/// Waits until `host` answers 200 with `needle` in the body through the proxy.
pub async fn wait_body(port: u16, host: &str, needle: &str) {
    let http = reqwest::Client::new();
    eventually(WAIT, &format!("{host} serving {needle}"), || {
        let http = http.clone();
        async move {
            fetch(&http, port, host)
                .await
                .filter(|(status, body)| *status == 200 && body.contains(needle))
        }
    })
    .await;
}

/// Names of the containers (running or not) matching a `docker ps` filter.
pub fn docker_names(filter: &str) -> Vec<String> {
    docker_lines(&["ps", "-a", "--filter", filter, "--format", "{{.Names}}"])
}

/// The names of the volumes the docker CLI lists for `filter` (e.g. `label=k=v`).
pub fn volumes(filter: &str) -> Vec<String> {
    docker_lines(&["volume", "ls", "-q", "--filter", filter])
}

/// The names of the networks the docker CLI lists for `filter` (e.g. `label=k=v`).
pub fn networks(filter: &str) -> Vec<String> {
    docker_lines(&["network", "ls", "--filter", filter, "--format", "{{.Name}}"])
}

/// The lines the docker CLI prints for `args`.
pub fn docker_lines(args: &[&str]) -> Vec<String> {
    let output = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI (tests only)");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// `repository:tag` of every image Berth built for `resource` in `namespace` (its repository
/// `berth-built/<namespace>/<resource>` and its Compose services' below it).
pub fn built_images(namespace: &str, resource: &str) -> Vec<String> {
    let repository = format!("berth-built/{namespace}/{resource}");
    let (named, below) = (
        format!("reference={repository}"),
        format!("reference={repository}/*"),
    );
    let format = "{{.Repository}}:{{.Tag}}";
    docker_lines(&[
        "images", "--filter", &named, "--filter", &below, "--format", format,
    ])
}

/// The reverse proxy's error lines of every edge proxy in the last `seconds` (Caddy's own log,
/// on stderr): why a request failed at the edge, for a test's failure message.
pub fn edge_proxy_errors(seconds: u64) -> Vec<String> {
    let mut errors = Vec::new();
    for container in docker_names("name=berth-edge-proxy.") {
        let output = std::process::Command::new("docker")
            .args(["logs", "--since", &format!("{seconds}s"), &container])
            .output()
            .expect("docker CLI (tests only)");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines = stderr.lines().filter(|l| l.contains("reverse_proxy"));
        errors.extend(lines.map(|line| format!("{container}: {line}")));
    }
    errors
}

/// Waits until no container carries `berth.dev/resource=<resource>`.
pub async fn wait_containers_gone(resource: &str) {
    let filter = format!("label=berth.dev/resource={resource}");
    eventually(WAIT, &format!("containers of {resource} removed"), || {
        let filter = filter.clone();
        async move { docker_names(&filter).is_empty().then_some(()) }
    })
    .await;
}

/// Waits until `GET /resources` lists `id` with a last deployment in `status`; returns the item.
pub async fn wait_listed_with(rest: &Rest, id: &str, status: &str) -> Value {
    eventually(
        WAIT,
        &format!("resource {id} listed as {status}"),
        || async {
            let list = rest.get("/resources").await.ok();
            list["items"]
                .as_array()?
                .iter()
                .find(|item| item["id"] == id && item["lastDeploymentStatus"] == status)
                .cloned()
        },
    )
    .await
}

/// Deletes a resource through the API (confirmed by its slug) and waits for its containers.
pub async fn delete_resource(admin: &Rest, id: &str, slug: &str) {
    let body = json!({"confirmation": {"resourceSlug": slug}});
    admin.delete(&format!("/resources/{id}"), body).await.ok();
    wait_containers_gone(id).await;
}

/// Asserts `value` is in no response body, no text in `extra`, and neither Berth log.
#[track_caller]
pub fn assert_never_shown(value: &str, extra: &[&str]) {
    assert!(
        !transcript().iter().any(|body| body.contains(value)),
        "a secret value came back in a response"
    );
    assert!(
        !extra.iter().any(|text| text.contains(value)),
        "a secret value is in a streamed response"
    );
    for variable in ["BERTH_SHIM_LOG", "BERTH_CONTROLLER_LOG"] {
        let path = std::env::var(variable).unwrap_or_else(|_| panic!("{variable} is set"));
        let log = std::fs::read_to_string(&path).expect("the log is readable");
        assert!(!log.contains(value), "a secret value is in {path}");
    }
}

/// One event of an event stream: its `id` (empty without one) and parsed `data`.
#[derive(Debug, Clone)]
pub struct StreamEvent {
    pub id: String,
    pub data: Value,
}

/// An event stream read as it arrives, event by event.
pub struct EventReader {
    response: reqwest::Response,
    buffer: String,
}

impl EventReader {
    /// Opens `GET path` with `headers` as `rest`; panics unless it answers 200 with an event
    /// stream.
    pub async fn open(rest: &Rest, path: &str, headers: &[(&str, &str)]) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .unwrap();
        let mut request = http.get(format!("{}{path}", berth_tests::rest::base_url()));
        if let Some(token) = &rest.token {
            request = request.bearer_auth(token);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("the shim answers");
        let content_type = response.headers().get("content-type").cloned();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        assert_eq!(
            content_type.and_then(|v| v.to_str().ok().map(str::to_string)),
            Some("text/event-stream".to_string())
        );
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event with data, or `None` once the stream ended.
    pub async fn next(&mut self) -> Option<StreamEvent> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .filter_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                        .map(|value| value.strip_prefix(' ').unwrap_or(value))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                let data = field("data");
                if !data.is_empty() {
                    return Some(StreamEvent {
                        id: field("id"),
                        data: serde_json::from_str(&data).expect("data is JSON"),
                    });
                }
            }
            let chunk = self.response.chunk().await.expect("the stream reads")?;
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

/// Kept-alive clients alternating GET and POST through the proxy until stopped: (answered,
/// failures). A failure is no answer, or the proxy's own 502/503/504.
pub struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    answered: std::sync::Arc<std::sync::atomic::AtomicU64>,
    clients: Vec<tokio::task::JoinHandle<Vec<String>>>,
}

impl Load {
    pub fn start(port: u16, host: &str, clients: usize) -> Self {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let answered = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let clients = (0..clients)
            .map(|_| {
                let (stop, answered, host) = (stop.clone(), answered.clone(), host.to_string());
                tokio::spawn(async move {
                    let http = reqwest::Client::builder()
                        .pool_max_idle_per_host(1)
                        .http1_only()
                        .build()
                        .unwrap();
                    let url = format!("http://127.0.0.1:{port}/");
                    let (mut failures, mut post) = (Vec::new(), false);
                    while !stop.load(Ordering::Relaxed) {
                        let (request, method) = match post {
                            true => (http.post(&url).body("ping"), "POST"),
                            false => (http.get(&url), "GET"),
                        };
                        post = !post;
                        match request.header("Host", &host).send().await {
                            Ok(r) if ![502, 503, 504].contains(&r.status().as_u16()) => {
                                let _ = r.bytes().await;
                                answered.fetch_add(1, Ordering::Relaxed);
                            }
                            // The edge's evidence body names the failure and the request id.
                            Ok(r) => {
                                let status = r.status();
                                let body = r.text().await.unwrap_or_default();
                                failures.push(format!("{method} {status}: {body}"));
                            }
                            Err(error) => failures.push(format!("{method} {error:?}")),
                        }
                    }
                    failures
                })
            })
            .collect();
        Self {
            stop,
            answered,
            clients,
        }
    }

    /// Each failure starts with its method (`GET …`, `POST …`).
    pub async fn finish(self) -> (u64, Vec<String>) {
        use std::sync::atomic::Ordering;
        self.stop.store(true, Ordering::Relaxed);
        let mut failures = Vec::new();
        for client in self.clients {
            failures.extend(client.await.unwrap());
        }
        (self.answered.load(Ordering::Relaxed), failures)
    }
}
