//! A managed dependency's host port (`spec.exposure`, `POST|DELETE
//! /dependency-resources/{id}/exposure`) reaches it only from the sources it lists, on both
//! kinds of engine the stack has:
//! - `local` (the machine's Docker, with iptables rules: a client from another network
//!   namespace is forwarded through `DOCKER-USER`, one on the host reaches Docker's proxy
//!   through `INPUT`): a Redis exposed to a test namespace's address answers it and refuses
//!   the host;
//! - server 2 (its own network namespace, an engine without iptables rules): a Redis exposed
//!   to the host answers it, stops answering when the allow-list changes, and leaves neither
//!   port nor firewall chain behind when the exposure is closed; a PostgreSQL beside it serves
//!   TLS with no port published.
//!
//! Every refusal leaves the dependency serving its bound apps on its private network.

use std::process::Command;
use std::time::Duration;

use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::dependency_resource::{
    DELETE_DATA_ANNOTATION, DependencyResource, EXPOSED_CONDITION,
};
use berth_tests::{TestNamespace, client, eventually, stack_env};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::dependency_resources::{
    create, docker, local_server, password, registry_image, wait_ready,
};
use crate::servers::support::{create_credential, create_server, stack_key, wait_condition};
use crate::shim_dependency_resources::Setup;
use crate::shim_projects_envs::invalid;

const WAIT: Duration = Duration::from_secs(180);
/// The test's client namespace and its address pair (198.18.0.0/15: benchmark addresses that
/// never leave the machine).
const CLIENT_NS: &str = "berth-t-expose";
const HOST_SIDE: &str = "198.18.77.1";
const CLIENT_SIDE: &str = "198.18.77.2";

fn run(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .status()
        .is_ok_and(|status| status.success())
}

/// A network namespace joined to the host by a veth pair, as a client on another machine.
struct ClientNamespace;

impl ClientNamespace {
    fn new() -> Self {
        Self::remove();
        assert!(run("ip", &["netns", "add", CLIENT_NS]));
        let (host_if, ns_if) = ("berth-t-exp-h", "berth-t-exp-n");
        assert!(run(
            "ip",
            &[
                "link", "add", host_if, "type", "veth", "peer", "name", ns_if
            ]
        ));
        assert!(run("ip", &["link", "set", ns_if, "netns", CLIENT_NS]));
        let host_addr = format!("{HOST_SIDE}/30");
        let ns_addr = format!("{CLIENT_SIDE}/30");
        assert!(run("ip", &["addr", "add", &host_addr, "dev", host_if]));
        assert!(run("ip", &["link", "set", host_if, "up"]));
        let inside = |args: &[&str]| {
            let mut all = vec!["netns", "exec", CLIENT_NS, "ip"];
            all.extend_from_slice(args);
            assert!(run("ip", &all), "ip {args:?} in {CLIENT_NS}");
        };
        inside(&["addr", "add", &ns_addr, "dev", ns_if]);
        inside(&["link", "set", ns_if, "up"]);
        inside(&["link", "set", "lo", "up"]);
        Self
    }

    fn remove() {
        // Deleting the namespace deletes its end of the pair, and with it the host's end.
        if std::path::Path::new(&format!("/run/netns/{CLIENT_NS}")).exists() {
            run("ip", &["netns", "del", CLIENT_NS]);
        }
    }
}

impl Drop for ClientNamespace {
    fn drop(&mut self) {
        Self::remove();
    }
}

/// Whether Redis at `host:port` answers PONG to `password`, run from `netns` (the host's own
/// namespace when `None`) within a few seconds.
fn pong(netns: Option<&str>, host: &str, port: u16, password: &str) -> bool {
    let port = port.to_string();
    let client = ["timeout", "5", "redis-cli", "-h", host, "-p", &port, "ping"];
    let mut command = match netns {
        Some(netns) => {
            let mut command = Command::new("ip");
            command.args(["netns", "exec", netns]).args(client);
            command
        }
        None => {
            let mut command = Command::new(client[0]);
            command.args(&client[1..]);
            command
        }
    };
    let output = command
        .env("REDISCLI_AUTH", password)
        .output()
        .expect("redis-cli (Debian's redis-tools, installed with the stack)");
    String::from_utf8_lossy(&output.stdout).trim() == "PONG"
}

/// Waits for `Exposed` of the current generation with `status`; returns its message.
async fn wait_exposed(
    api: &Api<DependencyResource>,
    name: &str,
    status: ConditionStatus,
) -> String {
    eventually(WAIT, &format!("{name} Exposed={status:?}"), || async {
        let dependency = api.get_opt(name).await.ok()??;
        let current = dependency.status.as_ref()?;
        let exposed = condition::find(&current.conditions, EXPOSED_CONDITION)?;
        let fresh = exposed.observed_generation == dependency.metadata.generation;
        let ready = condition::is_true(&current.conditions, READY);
        (fresh && ready && exposed.status == status).then(|| exposed.message.clone())
    })
    .await
}

async fn set_exposure(api: &Api<DependencyResource>, name: &str, exposure: serde_json::Value) {
    let patch = json!({"spec": {"exposure": exposure}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch spec.exposure");
}

fn chain_present(docker_host: Option<&str>, port: u16) -> bool {
    let rules = match docker_host {
        Some(netns) => Command::new("ip")
            .args(["netns", "exec", netns, "iptables", "-S", "INPUT"])
            .output(),
        None => Command::new("iptables").args(["-S", "INPUT"]).output(),
    }
    .expect("iptables");
    String::from_utf8_lossy(&rules.stdout).contains(&format!("berth-dependency-port-{port} "))
}

#[tokio::test]
async fn an_exposed_database_on_the_local_engine_answers_only_the_listed_source() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-expose").await;
    let _client_ns = ClientNamespace::new();
    local_server(&ns).await;
    let image = registry_image("berth/redis:7");
    create(&ns, "cache", "redis", &image).await;
    let api = ns.api::<DependencyResource>();
    let port = 16391;
    set_exposure(
        &api,
        "cache",
        json!({"hostPort": port, "allowFrom": [format!("{CLIENT_SIDE}/32")]}),
    )
    .await;

    let message = wait_exposed(&api, "cache", ConditionStatus::True).await;
    assert!(message.contains(CLIENT_SIDE), "{message}");
    let password = password(&ns, "cache").await;
    assert!(
        pong(Some(CLIENT_NS), HOST_SIDE, port, &password),
        "the listed source reaches the port (forwarded through DOCKER-USER)"
    );
    assert!(
        !pong(None, "127.0.0.1", port, &password),
        "the host is not listed: its connection is dropped (INPUT)"
    );
    let container = format!("berth-dep-{}-cache", ns.name);
    let (ok, _) = docker(&["exec", &container, "true"]);
    assert!(ok, "the database still runs for its bound apps");

    api.delete("cache", &Default::default()).await.unwrap();
    eventually(WAIT, "cache deleted", || async {
        matches!(api.get_opt("cache").await, Ok(None)).then_some(())
    })
    .await;
    assert!(!chain_present(None, port), "the firewall rules go with it");
    docker(&["volume", "rm", &format!("{container}-data")]);
}

#[tokio::test]
async fn an_exposed_database_on_server_two_follows_its_allow_list_and_closes() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-expose-two").await;
    let (private_key, _) = stack_key();
    create_credential(&ns, "key", &private_key).await;
    // Named `local` because `create` places its databases there; it is server 2.
    let servers = create_server(
        &ns,
        "local",
        &stack_env("BERTH_SSH2_HOST"),
        stack_env("BERTH_SSH2_PORT").parse().unwrap(),
        "key",
        json!({ "dockerSocketPath": stack_env("BERTH_SSH2_DOCKER_SOCKET") }),
    )
    .await;
    wait_condition(&servers, "local", READY, ConditionStatus::True, None, WAIT).await;
    // Server 2's engine pulls from no registry here: the image is loaded into it.
    let socket = format!("unix://{}", stack_env("BERTH_SSH2_DOCKER_SOCKET"));
    let loaded = Command::new("sh")
        .args([
            "-c",
            &format!("docker save berth/redis:7 berth/postgres:15 | docker -H {socket} load -q"),
        ])
        .status()
        .expect("docker save | load");
    assert!(loaded.success(), "the database images loaded into server 2");
    create(&ns, "cache", "redis", "berth/redis:7").await;
    // A PostgreSQL runs there too, private, serving TLS like one on `local`.
    create(&ns, "db", "postgres", "berth/postgres:15").await;
    let api = ns.api::<DependencyResource>();
    let port = 16392;
    let host = stack_env("BERTH_SSH2_HOST");
    let this_machine = "169.254.222.1/32";
    set_exposure(
        &api,
        "cache",
        json!({"hostPort": port, "allowFrom": [this_machine]}),
    )
    .await;

    wait_exposed(&api, "cache", ConditionStatus::True).await;
    let password = password(&ns, "cache").await;
    assert!(
        pong(None, &host, port, &password),
        "the listed source answers"
    );

    set_exposure(
        &api,
        "cache",
        json!({"hostPort": port, "allowFrom": ["198.18.0.0/15"]}),
    )
    .await;
    wait_exposed(&api, "cache", ConditionStatus::True).await;
    assert!(
        !pong(None, &host, port, &password),
        "a source no longer listed is dropped"
    );

    set_exposure(&api, "cache", serde_json::Value::Null).await;
    eventually(WAIT, "Exposed gone once closed", || async {
        let status = api.get("cache").await.ok()?.status?;
        condition::find(&status.conditions, EXPOSED_CONDITION)
            .is_none()
            .then_some(())
    })
    .await;
    let srv2 = "berth-srv2";
    assert!(!chain_present(Some(srv2), port), "its rules are removed");
    let published = Command::new("docker")
        .args([
            "-H",
            &socket,
            "port",
            &format!("berth-dep-{}-cache", ns.name),
        ])
        .output()
        .expect("docker port");
    assert!(
        String::from_utf8_lossy(&published.stdout).trim().is_empty(),
        "no port is published once closed"
    );
    assert!(
        pong_inside(&socket, &ns.name, &password),
        "it still serves privately"
    );
    wait_ready(&api, "db").await;
    let db = format!("berth-dep-{}-db", ns.name);
    let show_ssl = [
        "-H", &socket, "exec", &db, "psql", "-U", "berth", "-d", "app", "-tAc", "SHOW ssl",
    ];
    let ssl = Command::new("docker")
        .args(show_ssl)
        .output()
        .expect("docker exec psql");
    assert_eq!(
        String::from_utf8_lossy(&ssl.stdout).trim(),
        "on",
        "PostgreSQL on server 2"
    );
    let published = Command::new("docker")
        .args(["-H", &socket, "port", &db])
        .output()
        .expect("docker port");
    assert!(published.stdout.is_empty(), "no port without an exposure");
    let annotate = json!({"metadata": {"annotations": {DELETE_DATA_ANNOTATION: "db"}}});
    api.patch("db", &PatchParams::default(), &Patch::Merge(&annotate))
        .await
        .unwrap();
    api.delete("db", &Default::default()).await.unwrap();

    let annotate = json!({"metadata": {"annotations": {DELETE_DATA_ANNOTATION: "cache"}}});
    api.patch("cache", &PatchParams::default(), &Patch::Merge(&annotate))
        .await
        .unwrap();
    api.delete("cache", &Default::default()).await.unwrap();
    eventually(WAIT, "cache deleted", || async {
        matches!(api.get_opt("cache").await, Ok(None)).then_some(())
    })
    .await;
}

/// Whether the Redis container on the engine at `socket` answers inside itself.
fn pong_inside(socket: &str, namespace: &str, password: &str) -> bool {
    let container = format!("berth-dep-{namespace}-cache");
    let auth = format!("REDISCLI_AUTH={password}");
    let output = Command::new("docker")
        .args([
            "-H",
            socket,
            "exec",
            "-e",
            &auth,
            &container,
            "redis-cli",
            "ping",
        ])
        .output()
        .expect("docker exec");
    String::from_utf8_lossy(&output.stdout).trim() == "PONG"
}

/// Over REST (admins only): a port is published for the listed sources once the controller
/// put its rules in place, another dependency of the server cannot take the same port, a bad
/// source is a 422 naming it, and `DELETE` closes the port again.
pub(crate) async fn exposed_over_rest(s: &Setup, db: &str, cache: &str) {
    let path = |id: &str| format!("/dependency-resources/{id}/exposure");
    let asked = json!({"hostPort": 16393, "allowFrom": ["198.18.0.0/15"]});
    s.member
        .post(&path(db), asked.clone())
        .await
        .error(403, "forbidden");
    let bad = json!({"hostPort": 16393, "allowFrom": ["198.18.0.0/15", "every"]});
    invalid(s.admin.post(&path(db), bad).await, "allowFrom[1]");
    let none = json!({"hostPort": 16393, "allowFrom": []});
    invalid(s.admin.post(&path(db), none).await, "allowFrom");
    assert!(
        s.shown(db).await.get("exposure").is_none(),
        "nothing changed"
    );

    s.admin.post(&path(db), asked.clone()).await.ok();
    let shown = eventually(WAIT, "the port published", || async {
        let shown = s.shown(db).await;
        (shown["exposure"]["published"] == true).then_some(shown)
    })
    .await;
    assert_eq!(shown["exposure"]["allowFrom"], json!(["198.18.0.0/15"]));
    let message = shown["exposure"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("only 198.18.0.0/15"), "{message}");
    let taken = s
        .admin
        .post(&path(cache), asked)
        .await
        .error(409, "dependency_resource_host_port_conflict");
    assert_eq!(taken["details"]["field"], "hostPort");

    s.admin.delete(&path(db), json!({})).await.ok();
    assert!(s.shown(db).await.get("exposure").is_none());
    eventually(WAIT, "Exposed gone once closed", || async {
        let shown = s.shown(db).await;
        (shown["lifecycleStatus"] == "ready" && !chain_present(None, 16393)).then_some(())
    })
    .await;
}
