//! Two berth-shim replicas behind one Service: a second shim process, on the same cluster and
//! observation store as the running one, shares its pending terminal sessions and its login
//! limit, whichever replica a request lands on.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::sshd::{TestSshd, new_client_key};
use berth_tests::{client, eventually, random_suffix};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::shim_servers::{create_credential, create_server, wait_reachable};

const READ: Duration = Duration::from_secs(20);

/// A second berth-shim process, killed when dropped.
struct SecondShim {
    child: Child,
    /// `http://<address>`
    origin: String,
    log: PathBuf,
}

impl SecondShim {
    /// Starts berth-shim as hack/lib/berth.sh starts the running one (its ServiceAccount's
    /// kubeconfig, the environment hack/test.sh exported: data directory, store, intervals) on
    /// a free port of its own; [`ready`](Self::ready) waits for it.
    fn spawn() -> Self {
        let bin_dir = std::env::var("BERTH_BIN_DIR").expect("BERTH_BIN_DIR (hack/test.sh sets it)");
        let controller_kubeconfig = PathBuf::from(
            std::env::var("BERTH_CONTROLLER_KUBECONFIG")
                .expect("BERTH_CONTROLLER_KUBECONFIG (hack/test.sh sets it)"),
        );
        // hack/lib/berth.sh writes each process's kubeconfig into the stack directory.
        let kubeconfig = controller_kubeconfig.with_file_name("berth-shim.kubeconfig");
        assert!(kubeconfig.exists(), "{} is missing", kubeconfig.display());
        let shim_log = PathBuf::from(
            std::env::var("BERTH_SHIM_LOG").expect("BERTH_SHIM_LOG (hack/test.sh sets it)"),
        );
        let log = shim_log.with_file_name(format!("test-shim-replica-{}.log", random_suffix()));
        let output = std::fs::File::create(&log).expect("the second shim's log");
        let address = free_address();
        let child = Command::new(format!("{bin_dir}/berth-shim"))
            .args(["--listen", &address])
            .stdin(Stdio::null())
            .env("KUBECONFIG", &kubeconfig)
            .env_remove("BERTH_PUBLIC_URL")
            .stdout(output.try_clone().unwrap())
            .stderr(output)
            .spawn()
            .expect("start a second berth-shim");
        Self {
            child,
            origin: format!("http://{address}"),
            log,
        }
    }

    /// Waits until its caches are filled and it serves.
    async fn ready(&mut self) {
        let readyz = format!("{}/readyz", self.origin);
        eventually(Duration::from_secs(90), "the second shim's /readyz", || {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                panic!("the second shim exited ({status}): {log}");
            }
            let readyz = readyz.clone();
            async move {
                let response = reqwest::get(&readyz).await.ok()?;
                response.status().is_success().then_some(())
            }
        })
        .await;
    }

    /// A REST caller of this replica (a [`Rest`] knows the running one only).
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request =
            reqwest::Client::new().request(method, format!("{}/api{path}", self.origin));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the second shim answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for SecondShim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failed test keeps the log beside the running shim's, for its cause.
        if !std::thread::panicking() {
            std::fs::remove_file(&self.log).ok();
        }
    }
}

/// A local address no one listens on now.
fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap().to_string()
}

/// The running shim's origin (`BERTH_URL` without `/api`).
fn first_origin() -> String {
    base_url().trim_end_matches("/api").to_string()
}

/// Opens `path` (with its ticket) as a WebSocket on `origin`; the status of a refused handshake.
async fn connect(
    origin: &str,
    path: &str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    u16,
> {
    let url = format!("{}{path}", origin.replacen("http://", "ws://", 1));
    match tokio_tungstenite::connect_async(url).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            Err(response.status().as_u16())
        }
        Err(error) => panic!("WebSocket connect failed: {error}"),
    }
}

#[tokio::test]
async fn a_terminal_session_created_on_one_replica_is_listed_and_connected_on_another() {
    // Started first: it fills its caches while the server is set up.
    let mut second = SecondShim::spawn();
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let keys = std::env::temp_dir().join(format!("berth-replica-keys-{}", random_suffix()));
    let (key, public, _) = new_client_key(&keys, "replicas");
    let sshd = TestSshd::start(&[&public]);
    let credential = create_credential(&admin, &key).await;
    let server = create_server(&admin, &credential, sshd.port).await;
    wait_reachable(&admin, &server).await;
    second.ready().await;
    let token = admin.token.clone().expect("a signed-in admin");

    // Created on the running shim: the other replica lists it, waiting.
    let body = json!({"scope": {"kind": "server", "serverId": server}});
    let record = admin.post("/terminal-sessions", body).await.ok();
    let session = record["sessionId"].as_str().unwrap().to_string();
    let path = record["transport"]["path"].as_str().unwrap().to_string();
    let (status, listed) = second
        .send(
            reqwest::Method::GET,
            "/terminal-sessions",
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["items"][0]["sessionId"],
        session.as_str(),
        "{listed}"
    );
    assert_eq!(listed["items"][0]["status"], "pending", "{listed}");

    // Its ticket opens it through the other replica, once: the first replica has no more of it.
    let mut socket = connect(&second.origin, &path)
        .await
        .expect("the ticket connects through the second replica");
    assert_eq!(
        connect(&first_origin(), &path).await.err(),
        Some(404),
        "single use across replicas"
    );
    assert_eq!(connect(&second.origin, &path).await.err(), Some(404));
    let (status, listed) = second
        .send(
            reqwest::Method::GET,
            "/terminal-sessions",
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed["items"][0]["status"], "connected", "{listed}");

    let n: u32 = rand::random_range(1000..9000);
    let expected = format!("replica-{}", n + 1);
    let line = format!("echo replica-$(({n}+1))\r");
    socket
        .send(Message::Binary(line.into_bytes().into()))
        .await
        .unwrap();
    let mut output = String::new();
    while !output.contains(&expected) {
        let frame = tokio::time::timeout(READ, socket.next())
            .await
            .unwrap_or_else(|_| panic!("no terminal output for {READ:?}; so far: {output}"));
        match frame {
            Some(Ok(Message::Binary(bytes))) => output.push_str(&String::from_utf8_lossy(&bytes)),
            Some(Ok(Message::Text(_) | Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("the terminal closed before {expected:?}: {other:?}; {output}"),
        }
    }
    let exit = json!({"type": "input", "data": "exit\r"}).to_string();
    socket.send(Message::Text(exit.into())).await.unwrap();
    while let Ok(Some(Ok(_))) = tokio::time::timeout(READ, socket.next()).await {}

    // The ticket went into no log of either replica.
    let ticket = path.split("ticket=").nth(1).expect("a ticket in the path");
    let first_log = std::fs::read_to_string(std::env::var("BERTH_SHIM_LOG").unwrap()).unwrap();
    assert!(
        !first_log.contains(ticket),
        "the ticket is in the shim's log"
    );
    assert!(
        !second.log().contains(ticket),
        "the ticket is in the second shim's log"
    );

    drop(sshd);
    std::fs::remove_dir_all(&keys).ok();
}

#[tokio::test]
async fn failed_logins_on_both_replicas_count_toward_one_limit() {
    let mut second = SecondShim::spawn();
    second.ready().await;
    let first = Rest::anonymous();
    let email = format!("replica-{}@example.invalid", random_suffix());
    let wrong = json!({"email": email, "password": "not-the-password"});
    // Five failures, alternating between the replicas.
    for n in 0..5 {
        let status = if n % 2 == 0 {
            first.post("/auth/login", wrong.clone()).await.status
        } else {
            let (status, _) = second
                .send(
                    reqwest::Method::POST,
                    "/auth/login",
                    None,
                    Some(wrong.clone()),
                )
                .await;
            status
        };
        assert_eq!(status, 401, "failure {n}");
    }
    // The sixth is refused on either, whatever its spelling of the address.
    let shouting = json!({"email": email.to_uppercase(), "password": "not-the-password"});
    let (status, refused) = second
        .send(reqwest::Method::POST, "/auth/login", None, Some(shouting))
        .await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"]["code"], "rate_limited", "{refused}");
    let refused = first
        .post("/auth/login", wrong)
        .await
        .error(429, "rate_limited");
    let wait = refused["details"]["retryAfterSeconds"].as_u64().unwrap();
    assert!((1..=300).contains(&wait), "{refused}");
    // Neither replica logged the address.
    let first_log = std::fs::read_to_string(std::env::var("BERTH_SHIM_LOG").unwrap()).unwrap();
    assert!(
        !first_log.contains(&email),
        "the email is in the shim's log"
    );
    assert!(
        !second.log().contains(&email),
        "the email is in the second shim's log"
    );
}
