//! Resource configuration reaching real containers (issue 6): the environment of a deployed
//! container is the effective configuration the API shows (every scope, secrets unmasked only
//! inside the container), a configuration change restarts nothing until a deployment runs
//! (auto-deploy on), and no secret value reaches a status, an event or a log line.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::member::OrganizationRole;
use berth_crds::organization::Organization;
use berth_crds::project::Project;
use berth_crds::resource::{Resource, ResourceSpec};
use berth_tests::rest::{Rest, TestOrg, transcript};
use berth_tests::{TestNamespace, client, eventually, kubectl, random_suffix};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::deployments::{ready_server, teardown, wait_ended};
use crate::shim_projects_envs::{environment, project};

const WAIT: Duration = Duration::from_secs(90);

/// `docker inspect` of one field of a container, as JSON.
fn inspect(container: &str, template: &str) -> Value {
    let output = std::process::Command::new("docker")
        .args(["inspect", "-f", template, container])
        .output()
        .expect("docker CLI");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("inspect prints JSON")
}

/// The container's environment as a map.
fn container_env(container: &str) -> BTreeMap<String, String> {
    inspect(container, "{{json .Config.Env}}")
        .as_array()
        .expect("Env is a list")
        .iter()
        .filter_map(|pair| {
            let (key, value) = pair.as_str()?.split_once('=')?;
            Some((key.to_string(), value.to_string()))
        })
        .collect()
}

/// The container the deployment started.
fn container_of(deployment: &Deployment) -> String {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.container_id.clone())
        .expect("a succeeded deployment names its container")
}

async fn patch_variables<K>(api: &Api<K>, name: &str, variables: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let patch = json!({ "spec": { "variables": variables } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch variables");
}

/// Waits until the controller has acted on the resource's current generation.
async fn observed(resources: &Api<Resource>, id: &str) -> Resource {
    eventually(WAIT, "the controller observed the resource", || async {
        let resource = resources.get(id).await.ok()?;
        let seen = resource.status.as_ref()?.observed_generation;
        (seen == resource.metadata.generation).then_some(resource)
    })
    .await
}

async fn effective(rest: &Rest, id: &str) -> Vec<Value> {
    let body = rest
        .get(&format!("/resources/{id}/effective-config"))
        .await
        .ok();
    body["effectiveEntries"].as_array().cloned().unwrap()
}

#[tokio::test]
async fn a_deployed_container_gets_the_effective_config_and_changes_wait_for_a_deployment() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await;
    let rest = &member.rest;
    let ns = TestNamespace::adopt(&client, &org.namespace);
    ready_server(&ns).await;
    let project_id = project(rest, "Shop").await;
    let env_id = environment(rest, &project_id, "prod").await;

    // Variables in every scope: organization, project and environment the GitOps way.
    let organizations = Api::<Organization>::all(client.clone());
    patch_variables(
        &organizations,
        &org.id,
        json!([{"key": "LEVEL", "value": "organization"}, {"key": "ORG_ONLY", "value": "o"}]),
    )
    .await;
    patch_variables(
        &ns.api::<Project>(),
        &project_id,
        json!([{"key": "LEVEL", "value": "project"}, {"key": "REGION", "value": "us"}]),
    )
    .await;
    patch_variables(
        &ns.api::<berth_crds::environment::Environment>(),
        &env_id,
        json!([{"key": "REGION", "value": "eu"}, {"key": "PORT", "value": "8080"}]),
    )
    .await;

    // The resource first without a server, so its configuration is complete before it deploys.
    let id = format!("res-cfg{}", random_suffix());
    let spec: ResourceSpec = serde_json::from_value(json!({
        "projectId": project_id, "environmentId": env_id, "name": id, "kind": "application",
        "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
        "networkProfile": { "internalPort": 8080 },
        "runtimeProfile": { "healthCheck": { "path": "/healthz", "intervalSeconds": 1 } },
        "variables": [{ "key": "LEVEL", "value": "resource" }],
    }))
    .unwrap();
    let resources = ns.api::<Resource>();
    resources
        .create(&PostParams::default(), &Resource::new(&id, spec))
        .await
        .expect("create resource");
    let base = format!("/resources/{id}");
    eventually(WAIT, "resource visible to the shim", || async {
        (rest.get(&format!("{base}/secrets")).await.status == 200).then_some(())
    })
    .await;
    let secret = format!("pw-{}{}", random_suffix(), random_suffix());
    let build_secret = format!("bt-{}{}", random_suffix(), random_suffix());
    rest.post(
        &format!("{base}/secrets"),
        json!({"key": "DB_PASSWORD", "value": secret}),
    )
    .await
    .ok();
    rest.post(
        &format!("{base}/secrets"),
        json!({"key": "NPM_TOKEN", "value": build_secret, "exposure": "build-time"}),
    )
    .await
    .ok();
    rest.post(
        &format!("{base}/variables"),
        json!({"key": "NODE_ENV", "value": "production", "exposure": "build-time"}),
    )
    .await;
    let shown = effective(rest, &id).await;

    let patch = json!({ "spec": { "serverId": "local" } });
    resources
        .patch(&id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let first = eventually(WAIT, "the first deployment", || async {
        resources.get(&id).await.ok()?.status?.last_deployment_id
    })
    .await;
    let deployment = wait_ended(&ns, &first).await;
    let state = deployment.status.as_ref().and_then(|s| s.status);
    assert_eq!(state, Some(DeploymentState::Succeeded), "{deployment:?}");
    let container = container_of(&deployment);
    let env = container_env(&container);

    // Every runtime entry the API shows is in the container, with its real value; build-time
    // entries are not.
    for entry in &shown {
        let key = entry["key"].as_str().unwrap();
        if entry["exposure"] == "build-time" {
            assert!(
                !env.contains_key(key),
                "build-time {key} reached the container"
            );
            continue;
        }
        let expected = match key {
            "DB_PASSWORD" => secret.as_str(),
            _ => entry["value"].as_str().unwrap(),
        };
        assert_eq!(env.get(key).map(String::as_str), Some(expected), "{key}");
    }
    let value = |key: &str| env.get(key).map(String::as_str);
    assert_eq!(value("LEVEL"), Some("resource"));
    assert_eq!(value("REGION"), Some("eu"));
    assert_eq!(value("ORG_ONLY"), Some("o"));
    assert_eq!(value("PORT"), Some("8080"));
    assert_eq!(value("BERTH_RESOURCE_ID"), Some(id.as_str()));
    assert_eq!(value("BERTH_DEPLOYMENT_ID"), Some(first.as_str()));
    assert!(!env.contains_key("NPM_TOKEN") && !env.contains_key("NODE_ENV"));
    let started = inspect(&container, "{{json .State.StartedAt}}");

    // A configuration change with auto-deploy off restarts nothing and starts no attempt.
    rest.post(
        &format!("{base}/variables"),
        json!({"key": "LEVEL", "value": "changed"}),
    )
    .await;
    observed(&resources, &id).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let resource = observed(&resources, &id).await;
    let status = resource.status.clone().unwrap();
    assert_eq!(status.deployment_count, 1, "no new attempt: {status:?}");
    assert_eq!(inspect(&container, "{{json .State.StartedAt}}"), started);
    assert_eq!(container_env(&container).get("LEVEL").unwrap(), "resource");

    // Enabling auto-deploy is itself a change: the next attempt carries the new value.
    let policy = rest
        .post(&format!("{base}/auto-deploy"), json!({"mode": "enable"}))
        .await
        .ok();
    assert_eq!(policy["status"], "enabled");
    let second = eventually(WAIT, "an auto-deploy attempt", || async {
        let last = resources.get(&id).await.ok()?.status?.last_deployment_id?;
        (last != first).then_some(last)
    })
    .await;
    let deployment = wait_ended(&ns, &second).await;
    let state = deployment.status.as_ref().and_then(|s| s.status);
    assert_eq!(state, Some(DeploymentState::Succeeded), "{deployment:?}");
    let env = container_env(&container_of(&deployment));
    assert_eq!(env.get("LEVEL").map(String::as_str), Some("changed"));
    assert_eq!(env.get("DB_PASSWORD"), Some(&secret));

    // With auto-deploy on, a rotated secret (no spec change at all) rolls out by itself.
    let rotated = format!("pw2-{}{}", random_suffix(), random_suffix());
    let changed = std::time::Instant::now();
    rest.post(
        &format!("{base}/secrets/DB_PASSWORD"),
        json!({"value": rotated}),
    )
    .await
    .ok();
    let third = eventually(WAIT, "a configuration-change attempt", || async {
        let last = resources.get(&id).await.ok()?.status?.last_deployment_id?;
        (last != second).then_some(last)
    })
    .await;
    eprintln!(
        "secret rotated → attempt {third} reported: {:?}",
        changed.elapsed()
    );
    let deployment = wait_ended(&ns, &third).await;
    assert_eq!(deployment.spec.trigger.as_deref(), Some("config-change"));
    let env = container_env(&container_of(&deployment));
    assert_eq!(env.get("DB_PASSWORD"), Some(&rotated));

    // So does a variable set on the environment with kubectl.
    let changed = std::time::Instant::now();
    patch_variables(
        &ns.api::<berth_crds::environment::Environment>(),
        &env_id,
        json!([{"key": "REGION", "value": "ap"}, {"key": "PORT", "value": "8080"}]),
    )
    .await;
    let fourth = eventually(WAIT, "an environment-change attempt", || async {
        let last = resources.get(&id).await.ok()?.status?.last_deployment_id?;
        (last != third).then_some(last)
    })
    .await;
    eprintln!(
        "environment changed → attempt {fourth} reported: {:?}",
        changed.elapsed()
    );
    let deployment = wait_ended(&ns, &fourth).await;
    assert_eq!(deployment.spec.trigger.as_deref(), Some("config-change"));
    let env = container_env(&container_of(&deployment));
    assert_eq!(env.get("REGION").map(String::as_str), Some("ap"));

    // A new image repository is a new source binding: auto-deploy reports blocked and the
    // controller starts nothing for it.
    let patch =
        json!({ "spec": { "source": { "kind": "docker-image", "locator": "berth/busybox:1" } } });
    resources
        .patch(&id, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let policy = eventually(WAIT, "auto-deploy blocked", || async {
        let body = rest.get(&format!("{base}/auto-deploy")).await.ok();
        (body["status"] == "blocked").then_some(body)
    })
    .await;
    assert_eq!(policy["blockedReason"], "source-binding-changed");
    let resource = observed(&resources, &id).await;
    assert_eq!(resource.status.unwrap().deployment_count, 4);

    // No secret value in any status, event or log line.
    let objects = [
        serde_json::to_string(&resources.get(&id).await.unwrap()).unwrap(),
        serde_json::to_string(
            &ns.api::<Deployment>()
                .list(&Default::default())
                .await
                .unwrap(),
        )
        .unwrap(),
        String::from_utf8(kubectl(&["get", "events", "-n", &ns.name, "-o", "json"], None).stdout)
            .unwrap(),
    ];
    for log in ["BERTH_CONTROLLER_LOG", "BERTH_SHIM_LOG"] {
        let path = std::env::var(log).expect("log paths are set by hack/test.sh");
        let text = std::fs::read_to_string(&path).expect("log readable");
        for value in [&secret, &build_secret, &rotated] {
            assert!(!text.contains(value.as_str()), "secret in {path}");
        }
    }
    for text in objects.iter().chain(transcript().iter()) {
        for value in [&secret, &build_secret, &rotated] {
            assert!(!text.contains(value.as_str()), "secret shown");
        }
    }
    teardown(&ns, &id).await;
}
