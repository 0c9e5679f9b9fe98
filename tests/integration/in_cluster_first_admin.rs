//! The first administrator of an installation, created by a person in the console (Chromium,
//! `apiserver-shim/console/tests/first-admin.flow.mjs`) through the in-cluster shim's Service:
//! the sign-in page offers the form, the generated password is shown once and signs in, and
//! afterwards both replicas refuse a second first administrator. Part of `in_cluster`'s test,
//! whose cluster is fresh enough to be handed over without one.

use std::process::Stdio;
use std::time::Duration;

use berth_tests::rest::{Rest, base_url};
use berth_tests::{eventually, random_suffix, repo_root};
use serde_json::{Value, json};

use crate::in_cluster::{NS, kubectl_ok};

const FIRST_ADMIN: &str = "berth.dev/first-admin";
/// The flow in a browser, on two busy cores.
const FLOW: Duration = Duration::from_secs(180);

/// The stack's cluster has had its first administrator since its first run. To create one
/// through the Service the shim is handed a cluster without one: the label that marks the first
/// administrator comes off and the one-shot lock ConfigMap goes; afterwards the label is back on
/// the original administrator only (hack/test.sh repairs both if this test dies in between).
pub async fn first_admin_through_the_service() {
    let original = labelled_users();
    assert!(!original.is_empty(), "no first administrator to hand over");
    let unlabel = format!("{FIRST_ADMIN}-");
    for user in &original {
        kubectl_ok(&["label", user, &unlabel]);
    }
    kubectl_ok(&[
        "-n",
        NS,
        "delete",
        "configmap",
        "berth-bootstrap",
        "--ignore-not-found",
    ]);
    every_replica_offers_bootstrap().await;

    // Names of their own: an organization of an earlier run may still be going.
    let suffix = random_suffix();
    let email = format!("in-cluster-{suffix}@berth.local");
    run_first_admin_flow(&email, &format!("In cluster {suffix}")).await;
    let created = created_user(&original, &email);

    // Once: whichever replica answers refuses a second first administrator.
    let anonymous = Rest::anonymous();
    let second = json!({"email": format!("second-{email}"), "organizationName": "Second"});
    for _ in 0..4 {
        let reply = anonymous
            .post("/bootstrap/auth/first-admin", second.clone())
            .await;
        assert_eq!(reply.status, 409, "{:?}", reply.body);
    }

    // Back as it was: the original administrator is the first one again.
    kubectl_ok(&["label", &format!("users.berth.dev/{created}"), &unlabel]);
    for user in &original {
        kubectl_ok(&["label", user, &format!("{FIRST_ADMIN}=true")]);
    }
    let organization = organization_of(&created);
    kubectl_ok(&[
        "delete",
        "organizations.berth.dev",
        &organization,
        "--wait=false",
    ]);
}

/// `users.berth.dev/<name>` of each User marked as the first administrator.
fn labelled_users() -> Vec<String> {
    kubectl_ok(&["get", "users.berth.dev", "-l", FIRST_ADMIN, "-o", "name"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits until the Service's answers (from either replica's cache) all say an administrator is
/// still wanted, so the person in the browser meets the form on the first visit.
async fn every_replica_offers_bootstrap() {
    let anonymous = Rest::anonymous();
    eventually(
        Duration::from_secs(30),
        "every shim replica offering the first administrator",
        || {
            let anonymous = anonymous.clone();
            async move {
                for _ in 0..8 {
                    let status = anonymous.get("/bootstrap/auth/status").await.ok();
                    if status["bootstrapRequired"] != true {
                        return None;
                    }
                }
                Some(())
            }
        },
    )
    .await;
}

/// Runs the browser flow as the person installing Berth, signing up as `email` with the
/// organization `organization`.
async fn run_first_admin_flow(email: &str, organization: &str) {
    let console = repo_root().join("apiserver-shim/console");
    let run = tokio::process::Command::new("node")
        .args(["--test", "tests/first-admin.flow.mjs"])
        .current_dir(&console)
        .env("BERTH_CONSOLE_URL", base_url().trim_end_matches("/api"))
        .env("BERTH_CONSOLE_FIRST_ADMIN_EMAIL", email)
        .env("BERTH_CONSOLE_FIRST_ADMIN_ORGANIZATION", organization)
        .env(
            "BERTH_CONSOLE_SHOTS",
            repo_root().join(".berth/console-shots"),
        )
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(FLOW, run)
        .await
        .expect("the first-admin flow finishes in time")
        .expect("node runs");
    assert!(
        output.status.success(),
        "the first administrator was not created in the browser:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The name of the User the browser created: the one first administrator now, with `email`.
fn created_user(original: &[String], email: &str) -> String {
    let now: Vec<String> = labelled_users()
        .into_iter()
        .filter(|user| !original.contains(user))
        .collect();
    assert_eq!(now.len(), 1, "one new first administrator: {now:?}");
    // `kubectl get -o name` says `user.berth.dev/<name>`.
    let name = now[0].rsplit('/').next().unwrap_or_default().to_string();
    let user: Value = serde_json::from_str(&kubectl_ok(&[
        "get",
        "users.berth.dev",
        &name,
        "-o",
        "json",
    ]))
    .expect("kubectl -o json");
    assert_eq!(user["spec"]["email"], email, "{user}");
    name
}

/// The organization the first administrator owns (made with it): its Member's namespace's.
fn organization_of(user: &str) -> String {
    let members: Value = serde_json::from_str(&kubectl_ok(&[
        "get",
        "members.berth.dev",
        "-A",
        "-o",
        "json",
    ]))
    .expect("kubectl -o json");
    let namespace = members["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["spec"]["userId"] == user)
        .and_then(|m| m["metadata"]["namespace"].as_str())
        .unwrap_or_else(|| panic!("no membership of {user}"))
        .to_string();
    kubectl_ok(&[
        "get",
        "namespace",
        &namespace,
        "-o",
        "jsonpath={.metadata.labels.berth\\.dev/organization}",
    ])
}
