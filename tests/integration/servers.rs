//! Servers and SSH credentials against real sshd and Docker (issue 4): facts and Docker version
//! over the tunnel, a second server in its own network namespace, host keys pinned and refused,
//! reachability after sshd stops and comes back, key rotation, deletion guards, and no private
//! key anywhere a user or operator can read.

pub(crate) mod support;

use std::time::{Duration, Instant};

use berth_crds::condition::{ConditionStatus, READY};
use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::server::ServerLifecycle;
use berth_crds::ssh_credential::SshCredential;
use berth_tests::sshd::{TestSshd, fingerprint_of, new_client_key};
use berth_tests::{TestNamespace, client, eventually, random_suffix, stack_env};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use support::*;

const REACHABLE: &str = "Reachable";
const DOCKER_READY: &str = "DockerReady";
const PROXY_READY: &str = "ProxyReady";
const DELETION_BLOCKED: &str = "DeletionBlocked";

fn stack_port() -> u16 {
    stack_env("BERTH_SSH_PORT").parse().unwrap()
}

fn local_docker_version() -> String {
    let output = std::process::Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .expect("docker CLI (tests only; Berth never runs it)");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn docker_inspect(container: &str) -> Option<Value> {
    let output = std::process::Command::new("docker")
        .args(["inspect", container])
        .output()
        .expect("docker CLI");
    if !output.status.success() {
        return None;
    }
    let list: Value = serde_json::from_slice(&output.stdout).ok()?;
    list.get(0).cloned()
}

#[tokio::test]
async fn server_is_ready_with_facts_docker_version_pinned_key_and_edge_proxy() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-ready").await;
    let (private_key, public_key) = stack_key();
    create_credential(&ns, "key", &private_key).await;
    let (http_port, https_port) = (18081, 18444);
    let servers = create_server(
        &ns,
        "local",
        "127.0.0.1",
        stack_port(),
        "key",
        json!({ "proxy": { "kind": "caddy", "httpPort": http_port, "httpsPort": https_port } }),
    )
    .await;

    let server = wait_condition(&servers, "local", READY, ConditionStatus::True, None, WAIT).await;
    let status = server.status.unwrap();
    assert!(status.reachable);
    assert_eq!(
        status.host_key_fingerprint.as_deref(),
        Some(stack_env("BERTH_SSH_HOST_KEY_FINGERPRINT").as_str())
    );
    assert_eq!(
        status.docker_version.as_deref(),
        Some(local_docker_version().as_str())
    );
    let facts = status.facts.expect("facts");
    assert!(facts.os.is_some() && facts.kernel.is_some(), "{facts:?}");
    assert_eq!(facts.arch.as_deref(), Some(std::env::consts::ARCH));
    assert!(facts.cpus >= 1 && facts.memory_bytes > 0, "{facts:?}");
    assert_eq!(status.lifecycle_status, Some(ServerLifecycle::Active));
    assert!(status.last_contact_at.is_some());
    for type_ in [REACHABLE, DOCKER_READY, PROXY_READY] {
        let found = status.conditions.iter().find(|c| c.type_ == type_).unwrap();
        assert_eq!(found.status, ConditionStatus::True, "{type_}: {found:?}");
    }

    // The proxy answers a host no application claims with the access-failure evidence.
    let response = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{http_port}/no-such-app"))
        .header("Host", "unknown.example")
        .send()
        .await
        .expect("edge proxy answers on its HTTP port");
    assert_eq!(response.status().as_u16(), 404);
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let evidence: Value = response.json().await.unwrap();
    assert_eq!(evidence["code"], "resource_access_route_not_found");
    assert_eq!(evidence["requestId"], request_id.as_str());
    assert_eq!(evidence["affected"]["hostname"], "unknown.example");

    // Labelled, restarted unless stopped, on the edge network; no admin port published.
    let container_name = format!("berth-edge-proxy.{}.local", ns.name);
    let container = docker_inspect(&container_name).expect("proxy container exists");
    assert_eq!(container["Config"]["Labels"]["berth.dev/managed"], "true");
    assert_eq!(
        container["HostConfig"]["RestartPolicy"]["Name"],
        "unless-stopped"
    );
    assert_eq!(container["HostConfig"]["NetworkMode"], "berth-edge");
    let mut published: Vec<String> = container["HostConfig"]["PortBindings"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    published.sort();
    assert_eq!(published, vec!["443/tcp", "80/tcp"]);
    // The admin API listens only on a socket in a host directory mounted into the container.
    let bind = container["HostConfig"]["Binds"][0]
        .as_str()
        .unwrap()
        .to_string();
    let admin_dir = bind
        .strip_suffix(":/run/caddy")
        .expect("admin dir bind")
        .to_string();
    assert!(std::path::Path::new(&admin_dir).join("admin.sock").exists());

    // The credential shows its derived public key and which server uses it.
    let credential = ns.api::<SshCredential>().get("key").await.unwrap();
    let credential = credential.status.unwrap();
    assert!(credential.private_key_configured && credential.public_key_configured);
    let shown = credential.public_key.unwrap();
    assert_eq!(
        shown.split_whitespace().take(2).collect::<Vec<_>>(),
        public_key.split_whitespace().take(2).collect::<Vec<_>>()
    );
    let fingerprint = fingerprint_of(std::path::Path::new(&format!(
        "{}.pub",
        stack_env("BERTH_SSH_KEY")
    )));
    assert_eq!(
        credential.fingerprint.as_deref(),
        Some(fingerprint.as_str())
    );
    assert_eq!(credential.usage.total_servers, 1);
    assert_eq!(credential.usage.active_servers, 1);
    assert_eq!(credential.usage.servers[0].server_id, "local");

    wait_event(
        &ns,
        "HostKeyPinned",
        &stack_env("BERTH_SSH_HOST_KEY_FINGERPRINT"),
    )
    .await;
    wait_event(&ns, "ProxyStarted", "edge proxy").await;
    wait_event(&ns, "Reachable", "SSH to 127.0.0.1").await;

    // Deleting the server removes its proxy container.
    servers
        .delete("local", &DeleteParams::default())
        .await
        .unwrap();
    eventually(WAIT, "server gone and its proxy removed", || async {
        let gone = servers.get_opt("local").await.ok()?.is_none();
        (gone && docker_inspect(&container_name).is_none()).then_some(())
    })
    .await;
    assert!(
        !std::path::Path::new(&admin_dir).exists(),
        "admin dir left behind"
    );
}

#[tokio::test]
async fn second_server_in_its_own_network_namespace_shares_the_credential() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-two").await;
    let (private_key, _) = stack_key();
    create_credential(&ns, "key", &private_key).await;
    let servers = create_server(&ns, "one", "127.0.0.1", stack_port(), "key", json!({})).await;
    create_server(
        &ns,
        "two",
        &stack_env("BERTH_SSH2_HOST"),
        stack_env("BERTH_SSH2_PORT").parse().unwrap(),
        "key",
        json!({
            "dockerSocketPath": stack_env("BERTH_SSH2_DOCKER_SOCKET"),
            "lifecycleStatus": "inactive",
        }),
    )
    .await;

    let one = wait_condition(&servers, "one", READY, ConditionStatus::True, None, WAIT).await;
    let two = wait_condition(&servers, "two", READY, ConditionStatus::True, None, WAIT).await;
    let (one, two) = (one.status.unwrap(), two.status.unwrap());
    assert_eq!(
        two.host_key_fingerprint.as_deref(),
        Some(stack_env("BERTH_SSH2_HOST_KEY_FINGERPRINT").as_str())
    );
    assert_ne!(one.host_key_fingerprint, two.host_key_fingerprint);
    assert!(two.docker_version.is_some());
    let facts = two.facts.expect("facts of server two");
    assert!(facts.cpus >= 1 && facts.memory_bytes > 0);
    assert_eq!(two.lifecycle_status, Some(ServerLifecycle::Inactive));

    let usage = eventually(WAIT, "credential used by both servers", || async {
        let status = ns.api::<SshCredential>().get("key").await.ok()?.status?;
        (status.usage.total_servers == 2).then_some(status.usage)
    })
    .await;
    assert_eq!(usage.active_servers, 1);
    assert_eq!(usage.inactive_servers, 1);
    let hosts: Vec<_> = usage.servers.iter().map(|s| s.host.as_str()).collect();
    assert_eq!(
        hosts,
        vec!["127.0.0.1", stack_env("BERTH_SSH2_HOST").as_str()]
    );
}

/// Lines of `log` after byte `from` that show a key being accepted.
fn accepted_after(log: &str, from: usize) -> Vec<String> {
    log.get(from..)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("Accepted publickey"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn a_wrong_host_key_is_refused_before_anything_runs() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-hostkey").await;
    let (private_key, public_key) = stack_key();
    let mut sshd = TestSshd::start(&[&public_key]);
    let real = sshd.host_key_fingerprint();
    // A real fingerprint, of another host.
    let wrong = stack_env("BERTH_SSH2_HOST_KEY_FINGERPRINT");
    create_credential(&ns, "key", &private_key).await;
    let servers = create_server(
        &ns,
        "pinned",
        "127.0.0.1",
        sshd.port,
        "key",
        json!({ "expectedHostKeyFingerprint": wrong }),
    )
    .await;

    let refused = wait_condition(
        &servers,
        "pinned",
        REACHABLE,
        ConditionStatus::False,
        Some("HostKeyMismatch"),
        WAIT,
    )
    .await;
    let status = refused.status.unwrap();
    let reachable = status
        .conditions
        .iter()
        .find(|c| c.type_ == REACHABLE)
        .unwrap();
    assert!(
        reachable.message.contains(&wrong) && reachable.message.contains(&real),
        "{}",
        reachable.message
    );
    assert!(status.facts.is_none() && status.docker_version.is_none());
    assert!(status.host_key_fingerprint.is_none());
    wait_event(&ns, "HostKeyMismatch", &real).await;
    // The controller reached sshd, but never authenticated, so no command or channel ran.
    let log = sshd.log();
    assert!(log.contains("Connection from 127.0.0.1"), "{log}");
    assert!(accepted_after(&log, 0).is_empty(), "{log}");
    assert!(!log.contains("Starting session"), "{log}");

    // Without the explicit pin, the key seen on first contact is pinned.
    servers
        .patch(
            "pinned",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "expectedHostKeyFingerprint": null } })),
        )
        .await
        .unwrap();
    let pinned = wait_condition(&servers, "pinned", READY, ConditionStatus::True, None, WAIT).await;
    assert_eq!(
        pinned.status.unwrap().host_key_fingerprint.as_deref(),
        Some(real.as_str())
    );

    // The host comes back with another key: refused, and the pinned key stays.
    let mark = sshd.log().len();
    sshd.new_host_key();
    sshd.restart();
    let changed = sshd.host_key_fingerprint();
    let refused = wait_condition(
        &servers,
        "pinned",
        REACHABLE,
        ConditionStatus::False,
        Some("HostKeyMismatch"),
        WAIT,
    )
    .await;
    let status = refused.status.unwrap();
    let reachable = status
        .conditions
        .iter()
        .find(|c| c.type_ == REACHABLE)
        .unwrap();
    assert!(
        reachable
            .message
            .contains(&format!("expected {real}, got {changed}")),
        "{}",
        reachable.message
    );
    assert_eq!(status.host_key_fingerprint.as_deref(), Some(real.as_str()));
    let log = sshd.log();
    assert!(log[mark..].contains("Connection from 127.0.0.1"), "{log}");
    assert!(accepted_after(&log, mark).is_empty(), "{log}");
}

#[tokio::test]
async fn a_stopped_sshd_is_noticed_within_15_seconds_and_recovery_needs_no_restart() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-reach").await;
    let (private_key, public_key) = stack_key();
    let mut sshd = TestSshd::start(&[&public_key]);
    create_credential(&ns, "key", &private_key).await;
    let servers = create_server(&ns, "flaky", "127.0.0.1", sshd.port, "key", json!({})).await;
    wait_condition(&servers, "flaky", READY, ConditionStatus::True, None, WAIT).await;

    let stopped = Instant::now();
    sshd.stop();
    let down = wait_condition(
        &servers,
        "flaky",
        REACHABLE,
        ConditionStatus::False,
        None,
        Duration::from_secs(15),
    )
    .await;
    let noticed = stopped.elapsed();
    assert!(!down.status.unwrap().reachable);
    wait_event(&ns, "Unreachable", "").await;

    let restarted = Instant::now();
    sshd.restart();
    let up = wait_condition(&servers, "flaky", READY, ConditionStatus::True, None, WAIT).await;
    assert!(up.status.unwrap().reachable);
    eprintln!(
        "unreachable noticed after {noticed:?}; reachable again {:?} after restart",
        restarted.elapsed()
    );
}

#[tokio::test]
async fn a_rotated_key_is_used_by_the_next_connection_and_the_old_one_no_longer() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-rotate").await;
    let (old_key, old_public) = stack_key();
    let old_fingerprint = fingerprint_of(std::path::Path::new(&format!(
        "{}.pub",
        stack_env("BERTH_SSH_KEY")
    )));
    let keys = std::env::temp_dir().join(format!("berth-test-keys-{}", random_suffix()));
    let (new_key, new_public, new_fingerprint) = new_client_key(&keys, "rotated");
    let _ = std::fs::remove_dir_all(&keys);
    let sshd = TestSshd::start(&[&old_public, &new_public]);
    create_credential(&ns, "key", &old_key).await;
    let servers = create_server(&ns, "web", "127.0.0.1", sshd.port, "key", json!({})).await;
    wait_condition(&servers, "web", READY, ConditionStatus::True, None, WAIT).await;
    assert!(
        accepted_after(&sshd.log(), 0)
            .iter()
            .all(|l| l.contains(&old_fingerprint)),
        "{}",
        sshd.log()
    );

    // Rotate in place: the same Secret gets the new key.
    let mark = sshd.log().len();
    put_key_secret(&ns, "key", &new_key).await;
    let credential = eventually(WAIT, "credential shows the new key", || async {
        let status = ns.api::<SshCredential>().get("key").await.ok()?.status?;
        (status.fingerprint.as_deref() == Some(new_fingerprint.as_str())).then_some(status)
    })
    .await;
    assert!(credential.rotated_at.is_some());
    assert_eq!(credential.public_key.as_deref(), Some(new_public.as_str()));
    wait_event(&ns, "KeyRotated", &new_fingerprint).await;
    eventually(WAIT, "a login with the new key", || async {
        accepted_after(&sshd.log(), mark)
            .iter()
            .any(|l| l.contains(&new_fingerprint))
            .then_some(())
    })
    .await;

    // The old key is no longer needed: revoke it and force a new connection.
    sshd.set_authorized_keys(&[&new_public]);
    let mark_revoked = sshd.log().len();
    sshd.drop_connections();
    eventually(
        WAIT,
        "a login with the new key after revoking the old",
        || async {
            accepted_after(&sshd.log(), mark_revoked)
                .iter()
                .any(|l| l.contains(&new_fingerprint))
                .then_some(())
        },
    )
    .await;
    wait_condition(&servers, "web", READY, ConditionStatus::True, None, WAIT).await;
    let since_rotation = accepted_after(&sshd.log(), mark);
    assert!(
        since_rotation.iter().all(|l| !l.contains(&old_fingerprint)),
        "old key used after rotation: {since_rotation:?}"
    );
    assert_key_not_exposed(&ns, &new_key);
}

#[tokio::test]
async fn deletion_waits_while_a_resource_uses_the_server_and_a_server_the_credential() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-delete").await;
    let (private_key, _) = stack_key();
    create_credential(&ns, "key", &private_key).await;
    let servers = create_server(&ns, "web", "127.0.0.1", stack_port(), "key", json!({})).await;
    wait_condition(&servers, "web", READY, ConditionStatus::True, None, WAIT).await;
    let spec: ResourceSpec = serde_json::from_value(json!({
        "projectId": "shop",
        "environmentId": "production",
        "serverId": "web",
        "name": "Shop web",
        "kind": "application",
    }))
    .unwrap();
    let resources = ns.api::<Resource>();
    resources
        .create(&PostParams::default(), &Resource::new("shop-web", spec))
        .await
        .unwrap();

    servers
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let blocked = wait_condition(
        &servers,
        "web",
        DELETION_BLOCKED,
        ConditionStatus::True,
        Some("InUse"),
        WAIT,
    )
    .await;
    assert_eq!(
        blocked.status.unwrap().delete_blockers,
        vec!["resource/shop-web"]
    );
    let credentials = ns.api::<SshCredential>();
    credentials
        .delete("key", &DeleteParams::default())
        .await
        .unwrap();
    let credential = eventually(
        WAIT,
        "credential deletion blocked by the server",
        || async {
            let status = credentials.get_opt("key").await.ok()??.status?;
            let blocked = status
                .conditions
                .iter()
                .any(|c| c.type_ == DELETION_BLOCKED && c.status == ConditionStatus::True);
            blocked.then_some(status)
        },
    )
    .await;
    assert_eq!(credential.delete_blockers, vec!["server/web"]);
    wait_event(&ns, "DeletionBlocked", "resource/shop-web").await;
    wait_event(&ns, "DeletionBlocked", "server/web").await;
    // Still there a while later: the guards hold, not just slow.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(servers.get_opt("web").await.unwrap().is_some());
    assert!(credentials.get_opt("key").await.unwrap().is_some());

    resources
        .delete("shop-web", &DeleteParams::default())
        .await
        .unwrap();
    eventually(WAIT, "server and credential deleted", || async {
        let server_gone = servers.get_opt("web").await.ok()?.is_none();
        let credential_gone = credentials.get_opt("key").await.ok()?.is_none();
        (server_gone && credential_gone).then_some(())
    })
    .await;
}

#[tokio::test]
async fn private_keys_never_appear_in_status_events_or_the_controller_log() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-leak").await;
    let (private_key, _) = stack_key();
    create_credential(&ns, "good", &private_key).await;
    let canary = format!("berthleakcanary{}", random_suffix());
    let broken = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{canary}{}\n-----END OPENSSH PRIVATE KEY-----\n",
        "A".repeat(40)
    );
    create_credential(&ns, "broken", &broken).await;
    let servers = create_server(&ns, "good", "127.0.0.1", stack_port(), "good", json!({})).await;
    create_server(
        &ns,
        "broken",
        "127.0.0.1",
        stack_port(),
        "broken",
        json!({}),
    )
    .await;

    wait_condition(&servers, "good", READY, ConditionStatus::True, None, WAIT).await;
    let refused = wait_condition(
        &servers,
        "broken",
        REACHABLE,
        ConditionStatus::False,
        Some("CredentialNotReady"),
        WAIT,
    )
    .await;
    let message = &refused.status.unwrap().conditions[0].message;
    assert!(message.contains("broken"), "{message}");
    eventually(WAIT, "broken credential InvalidKey", || async {
        let status = ns.api::<SshCredential>().get("broken").await.ok()?.status?;
        let ready = status.conditions.iter().find(|c| c.type_ == READY)?;
        (ready.reason == "InvalidKey" && !status.private_key_configured).then_some(())
    })
    .await;

    assert_key_not_exposed(&ns, &private_key);
    assert!(
        !observable_text(&ns).contains(&canary),
        "text of an invalid key found in status, events or the controller log"
    );
}

#[tokio::test]
async fn deleting_a_whole_namespace_still_removes_the_edge_proxy() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "srv-nsdel").await;
    let (private_key, _) = stack_key();
    create_credential(&ns, "key", &private_key).await;
    let http_port: u16 = 27100 + rand::Rng::random_range(&mut rand::rng(), 0..800);
    let servers = create_server(
        &ns,
        "local",
        "127.0.0.1",
        stack_env("BERTH_SSH_PORT").parse().unwrap(),
        "key",
        json!({ "proxy": { "kind": "caddy", "httpPort": http_port, "httpsPort": http_port + 1000 } }),
    )
    .await;
    wait_condition(&servers, "local", READY, ConditionStatus::True, None, WAIT).await;
    let proxy = format!("berth-edge-proxy.{}.local", ns.name);
    let running = || {
        let output = std::process::Command::new("docker")
            .args([
                "ps",
                "-a",
                "--filter",
                &format!("name=^{proxy}$"),
                "--format",
                "{{.Names}}",
            ])
            .output()
            .expect("docker CLI");
        !String::from_utf8_lossy(&output.stdout).trim().is_empty()
    };
    assert!(running(), "the edge proxy runs");
    // The namespace goes with everything in it at once, the key Secret included; the key's
    // finalizer keeps it until the server has logged in one last time to remove its proxy.
    let name = ns.name.clone();
    drop(ns);
    let namespaces = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone());
    eventually(WAIT, "namespace gone", || async {
        namespaces
            .get_opt(&name)
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    assert!(!running(), "the edge proxy outlived its namespace");
}
