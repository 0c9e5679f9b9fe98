//! Objects and waits the server tests share.

use std::time::Duration;

use berth_crds::condition::{self, ConditionStatus};
use berth_crds::server::{Server, ServerSpec};
use berth_crds::ssh_credential::{SshCredential, SshCredentialSpec};
use berth_tests::{TestNamespace, eventually, kubectl, stack_env};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

pub const WAIT: Duration = Duration::from_secs(60);

/// The stack's client key: (private key text, public key line).
pub fn stack_key() -> (String, String) {
    let path = stack_env("BERTH_SSH_KEY");
    let private = std::fs::read_to_string(&path).expect("read $BERTH_SSH_KEY");
    let public = std::fs::read_to_string(format!("{path}.pub")).expect("read $BERTH_SSH_KEY.pub");
    (private, public.trim().to_string())
}

/// The base64 body lines of a private key: if any shows up somewhere, the key leaked.
pub fn secret_lines(private_key: &str) -> Vec<String> {
    private_key
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 20)
        .map(str::to_string)
        .collect()
}

/// Writes (creates or replaces) the Secret holding a private key.
pub async fn put_key_secret(ns: &TestNamespace, name: &str, private_key: &str) {
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": { "name": name },
        "stringData": { "privateKey": private_key },
    }))
    .unwrap();
    ns.api::<Secret>()
        .patch(
            name,
            &PatchParams::apply("berth-tests").force(),
            &Patch::Apply(&secret),
        )
        .await
        .expect("apply key Secret");
}

/// A Secret `name` with `private_key` and an SshCredential `name` referencing it.
pub async fn create_credential(ns: &TestNamespace, name: &str, private_key: &str) {
    put_key_secret(ns, name, private_key).await;
    let spec: SshCredentialSpec = serde_json::from_value(json!({
        "name": format!("{name} key"),
        "privateKeySecretRef": { "name": name, "key": "privateKey" },
    }))
    .unwrap();
    ns.api::<SshCredential>()
        .create(&PostParams::default(), &SshCredential::new(name, spec))
        .await
        .expect("create SshCredential");
}

/// A Server logging in as root with `credential`; `extra` is merged into the spec.
pub async fn create_server(
    ns: &TestNamespace,
    name: &str,
    host: &str,
    port: u16,
    credential: &str,
    extra: Value,
) -> Api<Server> {
    let mut spec = json!({
        "host": host,
        "port": port,
        "username": "root",
        "credentialId": credential,
        "proxy": { "kind": "none" },
    });
    merge(&mut spec, extra);
    let spec: ServerSpec = serde_json::from_value(spec).unwrap();
    let api = ns.api::<Server>();
    api.create(&PostParams::default(), &Server::new(name, spec))
        .await
        .expect("create Server");
    api
}

fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(base), Value::Object(extra)) => {
            for (key, value) in extra {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, extra) => *base = extra,
    }
}

/// Waits until the server's condition `type_` has `status` (and `reason`, when given). On
/// timeout the panic shows the conditions last seen.
pub async fn wait_condition(
    api: &Api<Server>,
    name: &str,
    type_: &str,
    status: ConditionStatus,
    reason: Option<&str>,
    timeout: Duration,
) -> Server {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = None;
    loop {
        if let Ok(Some(server)) = api.get_opt(name).await {
            let conditions = server
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default();
            let matches = condition::find(&conditions, type_).is_some_and(|found| {
                found.status == status && reason.is_none_or(|r| found.reason == r)
            });
            if matches {
                return server;
            }
            last = Some(conditions);
        }
        if tokio::time::Instant::now() >= deadline {
            panic!(
                "timed out after {timeout:?} waiting for server {name}: {type_}={status:?} \
                 {reason:?}; last conditions: {last:#?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `(reason, note)` of every event in the namespace.
pub fn events(ns: &TestNamespace) -> Vec<(String, String)> {
    let output = kubectl(
        &["get", "events.events.k8s.io", "-n", &ns.name, "-o", "json"],
        None,
    );
    assert!(output.status.success(), "kubectl get events failed");
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|e| {
                    (
                        e["reason"].as_str().unwrap_or_default().to_string(),
                        e["note"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits for an event with `reason` whose note contains `text`.
pub async fn wait_event(ns: &TestNamespace, reason: &str, text: &str) {
    eventually(
        WAIT,
        &format!("event {reason} mentioning {text}"),
        || async {
            events(ns)
                .iter()
                .any(|(r, note)| r == reason && note.contains(text))
                .then_some(())
        },
    )
    .await;
}

/// Everything a user can read about the namespace's Berth objects and events, plus the
/// controller's log: the places a private key must never appear.
pub fn observable_text(ns: &TestNamespace) -> String {
    let objects = kubectl(
        &[
            "get",
            "sshcredentials,servers,events.events.k8s.io",
            "-n",
            &ns.name,
            "-o",
            "yaml",
        ],
        None,
    );
    assert!(objects.status.success(), "kubectl get failed");
    let log = std::fs::read_to_string(stack_env("BERTH_CONTROLLER_LOG"))
        .expect("read the controller log ($BERTH_CONTROLLER_LOG)");
    format!("{}\n{log}", String::from_utf8_lossy(&objects.stdout))
}

/// Panics if any line of `private_key` appears in what users and operators can read.
pub fn assert_key_not_exposed(ns: &TestNamespace, private_key: &str) {
    let haystack = observable_text(ns);
    for line in secret_lines(private_key) {
        assert!(
            !haystack.contains(&line),
            "private key material found in status, events or the controller log"
        );
    }
}
