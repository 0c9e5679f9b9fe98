//! Two berth-shim replicas behind one Service: a second shim process, on the same cluster and
//! observation store as the running one, shares its terminal sessions (one connected through
//! either is listed and closed through the other) and its login limit, whichever replica a
//! request lands on. A Migration written with kubectl is run by berth-controller's leader
//! alone, a step per call to a shim: with two shims and two controllers each step runs once and
//! each receipt is written once; a plan applied over REST through both shims at once runs once
//! (the run holds the Migration's lease).

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::migration::Migration;
use berth_tests::rest::{Rest, TestOrg, base_url};
use berth_tests::sshd::{TestSshd, new_client_key};
use berth_tests::{client, eventually, random_suffix};
use futures::{SinkExt, StreamExt};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::deploy_support::{ready_server, remove_server};
use crate::replica_processes::{SecondShim, StandbyController};
use crate::shim_servers::{create_credential, create_server, wait_reachable};

const READ: Duration = Duration::from_secs(20);

/// One second shim at a time: this file counts the steps across the shims' logs, so another
/// test's replica (killed when its test ends) must not run a step meanwhile.
static ONE_SECOND_SHIM: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
async fn a_terminal_session_created_on_one_replica_is_listed_connected_and_closed_on_another() {
    // Started first: it fills its caches while the server is set up.
    let _alone = ONE_SECOND_SHIM.lock().await;
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
    // Waiting for its WebSocket is `active` in Appaloft's vocabulary.
    assert_eq!(listed["items"][0]["status"], "active", "{listed}");

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
    assert_eq!(listed["items"][0]["status"], "active", "{listed}");

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
    // Connected through the second replica, it is listed and shown by the first, which
    // closes it: the second ends its shell and its WebSocket before the first answers.
    let listed = admin.get("/terminal-sessions").await.ok();
    assert_eq!(
        listed["items"][0]["sessionId"],
        session.as_str(),
        "{listed}"
    );
    assert_eq!(listed["items"][0]["status"], "active", "{listed}");
    let shown = admin
        .get(&format!("/terminal-sessions/{session}"))
        .await
        .ok();
    assert_eq!(shown["item"]["status"], "active", "{shown}");
    let close = format!("/terminal-sessions/{session}/close");
    let closed = admin.post(&close, json!({})).await.ok();
    assert_eq!(
        closed,
        json!({"sessionId": session, "closed": true, "status": "closed"})
    );
    let mut told = Vec::new();
    loop {
        let frame = tokio::time::timeout(READ, socket.next())
            .await
            .expect("the closed session's socket ends");
        match frame {
            Some(Ok(Message::Text(text))) => told.push(text.as_str().to_string()),
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(_)) => {}
        }
    }
    assert!(
        told.iter()
            .any(|text| text.contains("the terminal session was closed")),
        "{told:?}"
    );
    // Either replica answers a second close the same, and lists the session no more.
    let (status, again) = second
        .send(reqwest::Method::POST, &close, Some(&token), Some(json!({})))
        .await;
    assert_eq!((status, again), (200, closed));
    let (status, listed) = second
        .send(
            reqwest::Method::GET,
            "/terminal-sessions",
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert!(!listed.to_string().contains(&session), "{listed}");

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
    let _alone = ONE_SECOND_SHIM.lock().await;
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

/// A project, its environment, two variables and a worker on `server`: six steps.
fn worker_bundle(server: &str) -> Value {
    json!({
        "apiVersion": "appaloft.io/migration/v1", "kind": "MigrationBundle",
        "metadata": {"name": "replicas"},
        "spec": {
            "project": {"name": format!("Replicas {}", random_suffix())},
            "environment": {"name": "production", "kind": "production"},
            "target": {"deploymentTargetId": server},
            "resources": [{"ref": "worker", "name": "Worker", "kind": "worker",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"}}],
            "variables": [
                {"key": "APP_MODE", "value": "production", "exposure": "runtime"},
                {"key": "REGION", "value": "eu", "exposure": "runtime"},
            ],
        }
    })
}

/// The steps of `migration` either replica's log says completed, sorted.
fn completed_anywhere(second: &SecondShim, migration: &str) -> Vec<String> {
    let first_log = std::fs::read_to_string(std::env::var("BERTH_SHIM_LOG").unwrap()).unwrap();
    let mut ran = completions(&first_log, migration);
    ran.extend(completions(&second.log(), migration));
    ran.sort();
    ran
}

/// Lines of `log` that say `step` of `migration` completed (ANSI colours removed).
fn completions(log: &str, migration: &str) -> Vec<String> {
    let plain = strip_ansi(log);
    plain
        .lines()
        .filter(|line| line.contains("migration step completed"))
        .filter(|line| line.contains(&format!("migration={migration} ")))
        .filter_map(|line| {
            let step = line.split("step=").nth(1)?;
            Some(step.split_whitespace().next()?.to_string())
        })
        .collect()
}

fn strip_ansi(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // An escape sequence ends with its first letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

#[tokio::test]
async fn a_migration_written_with_kubectl_runs_each_step_on_one_replica() {
    let _alone = ONE_SECOND_SHIM.lock().await;
    let mut second = SecondShim::spawn();
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await.rest;
    let (server, _) = ready_server(&owner).await;
    second.ready().await;
    let standby = StandbyController::spawn(&second);
    only_the_controller_runs_steps(&second, &owner).await;
    let planned = owner
        .post(
            "/migrations/plan",
            json!({ "bundle": worker_bundle(&server) }),
        )
        .await
        .ok();
    let steps: Vec<String> = planned["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["id"].as_str().unwrap().to_string())
        .collect();
    assert!(steps.len() >= 3, "{planned}");
    let digest = planned["planDigest"].as_str().unwrap().to_string();
    // Both controllers see it; the leader runs it, a step per call to its shim.
    let name = format!("replicas-{}", random_suffix());
    let migration: Migration = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Migration",
        "metadata": {"name": name},
        "spec": {"plan": planned, "digest": digest, "confirmedDigest": digest},
    }))
    .unwrap();
    let api = Api::<Migration>::namespaced(client.clone(), &org.namespace);
    api.create(&Default::default(), &migration).await.unwrap();
    let applied = eventually(
        Duration::from_secs(120),
        "the Migration applied",
        || async {
            let status = api.get(&name).await.ok()?.status?;
            (status.phase.as_deref() == Some("applied")).then_some(status)
        },
    )
    .await;
    let recorded: Vec<&str> = applied
        .receipts
        .iter()
        .map(|r| r.step_id.as_str())
        .collect();
    assert_eq!(recorded, steps, "one receipt per step, in order");

    // Each step ran once, on one shim or the other: never on both, never twice.
    let mut expected = steps.clone();
    expected.sort();
    assert_eq!(
        completed_anywhere(&second, &name),
        expected,
        "steps completed across both replicas"
    );

    // Cleanup, asked in the spec, runs once too and leaves the server empty.
    let patch = json!({"spec": {"cleanupConfirmedDigest": digest}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually(
        Duration::from_secs(120),
        "the Migration cleaned up",
        || async {
            let status = api.get(&name).await.ok()?.status?;
            (status.phase.as_deref() == Some("cleaned-up")).then_some(())
        },
    )
    .await;
    assert!(
        !standby.log().contains("migration step"),
        "the standby controller ran a step: {}",
        standby.log()
    );
    let recorded_by = status_writers(&api, &name).await;
    assert_eq!(recorded_by, ["berth-controller"], "who wrote the status");
    applied_over_rest_on_both_at_once(&owner, &second, &server).await;
    remove_server(&owner, &server).await;
}

/// The internal path that runs a step answers berth-controller only: no token, a user's token
/// or a made-up one is refused (401), and nothing runs.
async fn only_the_controller_runs_steps(second: &SecondShim, owner: &Rest) {
    let url = format!("{}/internal/migrations/any/mig-x/next-step", second.origin);
    let body = json!({"work": "apply", "resourceVersion": "1"});
    let token = owner.token.clone().expect("a signed-in owner");
    for bearer in [None, Some(token.as_str()), Some("made-up")] {
        let mut request = reqwest::Client::new().post(&url).json(&body);
        if let Some(bearer) = bearer {
            request = request.bearer_auth(bearer);
        }
        let response = request.send().await.expect("the second shim answers");
        assert_eq!(response.status().as_u16(), 401, "bearer {bearer:?}");
    }
}

/// The field managers that wrote the Migration's status.
async fn status_writers(api: &Api<Migration>, name: &str) -> Vec<String> {
    let migration = api.get(name).await.unwrap();
    let mut managers: Vec<String> = migration
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|entry| {
            let fields = entry.fields_v1.as_ref().map(|f| &f.0);
            fields.is_some_and(|f| f.get("f:status").is_some())
        })
        .filter_map(|entry| entry.manager)
        .collect();
    managers.sort();
    managers.dedup();
    managers
}

/// The same plan applied over REST through both replicas at once: one runs it (the other is
/// told it is in progress, or finds it done), and each step completes once.
async fn applied_over_rest_on_both_at_once(owner: &Rest, second: &SecondShim, server: &str) {
    let planned = owner
        .post(
            "/migrations/plan",
            json!({ "bundle": worker_bundle(server) }),
        )
        .await
        .ok();
    let body = json!({
        "plan": planned, "confirmedPlanDigest": planned["planDigest"], "priorReceipts": [],
    });
    let token = owner.token.clone().expect("a signed-in owner");
    let (first, other) = tokio::join!(
        owner.post("/migrations/apply", body.clone()),
        second.send(
            reqwest::Method::POST,
            "/migrations/apply",
            Some(&token),
            Some(body)
        ),
    );
    let answers = [(first.status, first.body), other];
    for (status, answer) in &answers {
        let refused = *status == 409 && answer["error"]["code"] == "migration_in_progress";
        let completed = *status == 200 && answer["state"] == "completed";
        assert!(refused || completed, "{status} {answer}");
    }
    let (_, done) = answers
        .iter()
        .find(|(status, _)| *status == 200)
        .expect("one replica applied it");
    let name = done["migrationName"].as_str().unwrap();
    let mut expected: Vec<String> = planned["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["id"].as_str().unwrap().to_string())
        .collect();
    expected.sort();
    assert_eq!(
        completed_anywhere(second, name),
        expected,
        "steps applied over REST"
    );
    let cleanup = json!({
        "plan": planned, "confirmedPlanDigest": planned["planDigest"],
        "receipts": done["receipts"],
    });
    let cleaned = owner.post("/migrations/cleanup", cleanup).await.ok();
    assert_eq!(cleaned["state"], "completed", "{cleaned}");
}
