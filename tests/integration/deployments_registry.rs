//! Deployments of an image the server does not have: pulled from the stack's private registry
//! (127.0.0.1:5000, htpasswd auth) with the credentials of a `kubernetes.io/dockerconfigjson`
//! Secret named by `imagePullSecretRef`. Wrong credentials fail with `image_pull_failed` and the
//! wrong password appears in no status, event or controller log line; a missing Secret fails
//! with `image_pull_secret_missing`.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

use berth_crds::deployment::{DeploymentError, DeploymentState};
use berth_tests::{TestNamespace, client, kubectl, random_suffix, stack_env};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use serde_json::json;

use crate::deploy_support::wait_body;
use crate::deployments::{ready_server, teardown, wait_ended};

/// The stack's registry copy of sample-app v2, pulled by the successful test only.
fn pulled_image() -> String {
    stack_env("BERTH_REGISTRY_SAMPLE_IMAGE")
}

/// The registry copy of v1: no test pulls it successfully, so it stays missing on the server.
fn never_pulled_image() -> String {
    format!("{}/berth/sample-app:1", stack_env("BERTH_REGISTRY"))
}

/// Removes the local copy of `image` on the server (the stack's Docker engine), so a deployment
/// must pull it.
fn remove_local(image: &str) {
    let _ = Command::new("docker").args(["rmi", image]).output();
    let inspected = Command::new("docker")
        .args(["image", "inspect", image])
        .output()
        .expect("docker CLI");
    assert!(
        !inspected.status.success(),
        "{image} is still on the server (a container uses it?)"
    );
}

/// A `kubernetes.io/dockerconfigjson` Secret with `user`/`password` for the stack's registry.
async fn create_pull_secret(ns: &TestNamespace, name: &str, user: &str, password: &str) {
    let registry = stack_env("BERTH_REGISTRY");
    let config = json!({ "auths": { registry: { "username": user, "password": password } } });
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_string(),
            ByteString(config.to_string().into_bytes()),
        )])),
        ..Default::default()
    };
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the pull Secret");
}

/// Applies an auto-deployed Resource `name` running `image`, pulled with Secret `pull_secret`.
fn apply_resource(ns: &TestNamespace, name: &str, image: &str, pull_secret: &str) {
    let manifest = json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": name, "kind": "application",
            "source": { "kind": "docker-image", "locator": image },
            "imagePullSecretRef": { "name": pull_secret },
            "runtimeProfile": { "healthCheck": { "path": "/healthz", "intervalSeconds": 1, "retries": 2 } },
            "networkProfile": { "internalPort": 8080 },
            "autoDeploy": { "enabled": true },
        },
    });
    let output = kubectl(&["apply", "-f", "-"], Some(&manifest.to_string()));
    assert!(output.status.success(), "kubectl apply: {output:?}");
}

/// The last error of a Deployment that must have failed.
async fn failed_with(ns: &TestNamespace, deployment: &str) -> DeploymentError {
    let status = wait_ended(ns, deployment).await.status.unwrap();
    assert_eq!(status.status, Some(DeploymentState::Failed), "{status:?}");
    status
        .last_error
        .expect("a failed attempt has a last error")
}

fn kubectl_json(args: &[&str]) -> String {
    let output = kubectl(args, None);
    assert!(output.status.success(), "kubectl {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn a_missing_image_is_pulled_from_a_private_registry_with_the_pull_secret() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-pull").await;
    let port = ready_server(&ns).await;
    let image = pulled_image();
    remove_local(&image);
    let user = stack_env("BERTH_REGISTRY_USER");
    create_pull_secret(&ns, "regcred", &user, &stack_env("BERTH_REGISTRY_PASSWORD")).await;

    let started = Instant::now();
    apply_resource(&ns, "web", &image, "regcred");
    let status = wait_ended(&ns, "dep-web-1").await.status.unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{:?}",
        status.last_error
    );
    eprintln!("apply → pulled and deployed: {:?}", started.elapsed());
    assert_eq!(status.image_ref.as_deref(), Some(image.as_str()));
    wait_body(port, "web.localhost", "hello from berth sample-app v2").await;
    let inspected = Command::new("docker")
        .args(["image", "inspect", &image])
        .output()
        .unwrap();
    assert!(inspected.status.success(), "{image} was not pulled");

    teardown(&ns, "web").await;
}

#[tokio::test]
async fn wrong_credentials_and_a_missing_secret_fail_without_leaking_the_password() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "dep-pull-bad").await;
    ready_server(&ns).await;
    let image = never_pulled_image();
    remove_local(&image);
    let wrong_password = format!("wrong-pw-{}-{}", random_suffix(), random_suffix());
    let user = stack_env("BERTH_REGISTRY_USER");
    create_pull_secret(&ns, "badcred", &user, &wrong_password).await;

    apply_resource(&ns, "bad", &image, "badcred");
    apply_resource(&ns, "orphan", &image, "absent-cred");
    let denied = failed_with(&ns, "dep-bad-1").await;
    assert_eq!(denied.code, "image_pull_failed", "{denied:?}");
    for part in [image.as_str(), "registry 127.0.0.1:5000", "badcred"] {
        assert!(denied.message.contains(part), "{part}: {}", denied.message);
    }
    let missing = failed_with(&ns, "dep-orphan-1").await;
    assert_eq!(missing.code, "image_pull_secret_missing", "{missing:?}");
    assert!(
        missing.message.contains("absent-cred"),
        "{}",
        missing.message
    );

    let namespace = ns.name.as_str();
    let evidence = [
        kubectl_json(&[
            "get",
            "deployments.berth.dev",
            "-n",
            namespace,
            "-o",
            "json",
        ]),
        kubectl_json(&["get", "resources.berth.dev", "-n", namespace, "-o", "json"]),
        kubectl_json(&["get", "events", "-n", namespace, "-o", "json"]),
        std::fs::read_to_string(stack_env("BERTH_CONTROLLER_LOG")).expect("controller log"),
    ];
    assert!(
        evidence[2].contains("image_pull_failed"),
        "the failure is an event"
    );
    for (i, text) in evidence.iter().enumerate() {
        assert!(
            !text.contains(&wrong_password),
            "evidence {i} holds the password"
        );
    }

    teardown(&ns, "bad").await;
    teardown(&ns, "orphan").await;
}
