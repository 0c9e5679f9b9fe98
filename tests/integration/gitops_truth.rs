//! Issue 47, as a GitOps user meets it on the real stack: a Resource applied with kubectl says
//! when its declared spec is not what runs (`Deployed=False`, `ChangesNotDeployed`) while
//! `Ready` stays true and the old version keeps serving; and what Berth makes for an object
//! (threshold policies of a scope, a resource's domain bindings) goes when that object goes,
//! while what the user keeps (storage volumes) stays.

use std::time::Duration;

use berth_crds::condition::{ConditionStatus, READY};
use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::environment::Environment;
use berth_crds::member::OrganizationRole;
use berth_crds::project::Project;
use berth_crds::resource::Resource;
use berth_crds::resource::deployed::DEPLOYED;
use berth_crds::server::Server;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::threshold_policy::ThresholdPolicy;
use berth_tests::rest::TestOrg;
use berth_tests::{TestNamespace, client, eventually_explained, random_suffix};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::deployments::{apply, ready_server, teardown, wait_ended};
use crate::servers::support::{create_credential, create_server, stack_key};
use crate::shim_projects_envs::{environment, project};

const WAIT: Duration = Duration::from_secs(120);

fn web(ns: &TestNamespace, start: &str) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": "truth", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": "truth", "kind": "application",
            "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
            "runtimeProfile": {
                "startCommand": start,
                "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 },
            },
            "networkProfile": { "internalPort": 8080 },
        },
    })
    .to_string()
}

/// GET `path` for `truth.localhost` through the edge proxy: the status code.
async fn status_of(port: u16, path: &str) -> Option<u16> {
    let response = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Host", "truth.localhost")
        .send()
        .await
        .ok()?;
    Some(response.status().as_u16())
}

/// The Resource's condition `type_` as (status, reason, message), once its status is of the
/// current generation and `check` accepts it.
async fn condition_when(
    api: &Api<Resource>,
    type_: &str,
    check: impl Fn(&(ConditionStatus, String, String)) -> bool,
) -> Resource {
    eventually_explained(WAIT, &format!("condition {type_}"), || async {
        let resource = api.get("truth").await.map_err(|e| e.to_string())?;
        let status = resource.status.clone().unwrap_or_default();
        let seen = status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .map(|c| (c.status, c.reason.clone(), c.message.clone()));
        let current = status.observed_generation == resource.metadata.generation;
        match seen {
            Some(seen) if current && check(&seen) => Ok(resource),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

fn ready_of(resource: &Resource) -> (ConditionStatus, String) {
    let conditions = &resource.status.as_ref().unwrap().conditions;
    let ready = conditions.iter().find(|c| c.type_ == READY).unwrap();
    (ready.status, ready.reason.clone())
}

#[tokio::test]
async fn a_change_not_deployed_is_said_while_the_old_version_serves_and_stays_ready() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "truth").await;
    let port = ready_server(&ns).await;
    let v1 = "exec /bin/sample-app";
    apply(&web(&ns, v1));
    let api = ns.api::<Resource>();
    let first = condition_when(&api, DEPLOYED, |(s, _, _)| *s == ConditionStatus::True).await;
    assert_eq!(ready_of(&first), (ConditionStatus::True, "Serving".into()));

    // A new start command, re-applied with auto-deploy off (the default): nothing deploys.
    let v2 = "echo changed > /www/changed.txt; exec /bin/sample-app";
    apply(&web(&ns, v2));
    let pending = condition_when(&api, DEPLOYED, |(s, _, _)| *s == ConditionStatus::False).await;
    let deployed = pending.status.as_ref().unwrap();
    let condition = deployed.conditions.iter().find(|c| c.type_ == DEPLOYED);
    let condition = condition.unwrap();
    assert_eq!(condition.reason, "ChangesNotDeployed");
    assert!(
        condition
            .message
            .contains("changes not deployed: runtimeProfile;")
            && condition.message.contains("berth deploy truth")
            && condition.message.contains("spec.autoDeploy.enabled"),
        "{}",
        condition.message
    );
    let state = deployed.deployed_state.clone().unwrap();
    assert_eq!(state.changes_not_deployed, ["runtimeProfile"]);
    assert!(!state.up_to_date);
    // kstatus (Flux, Argo) reads it healthy and current: Ready true, the generation observed,
    // no Reconciling or Stalled condition.
    assert_eq!(
        ready_of(&pending),
        (ConditionStatus::True, "Serving".into())
    );
    assert!(
        deployed
            .conditions
            .iter()
            .all(|c| c.type_ != "Reconciling" && c.type_ != "Stalled")
    );
    // The old version still serves (the edge proxy's 404 for an unknown host would pass the
    // second check alone): the new start command's file is not there.
    assert_eq!(status_of(port, "/").await, Some(200));
    assert_eq!(status_of(port, "/changed.txt").await, Some(404));
    let attempts = ns.api::<Deployment>().list(&ListParams::default()).await;
    assert_eq!(
        attempts.unwrap().items.len(),
        1,
        "nothing deployed the change"
    );
    // `kubectl get` shows it in the Deployed column: READY True, DEPLOYED False.
    let printed = berth_tests::kubectl(&["get", "bres", "truth", "-n", &ns.name], None);
    let table = String::from_utf8_lossy(&printed.stdout).to_string();
    // kubectl aligns each value under its header (headers may hold spaces).
    let mut lines = table.lines();
    let (header, row) = (
        lines.next().unwrap_or_default(),
        lines.next().unwrap_or_default(),
    );
    let column = |name: &str| {
        let at = header.find(&format!(" {name} "))? + 1;
        row.get(at..)?.split_whitespace().next().map(str::to_string)
    };
    assert_eq!(column("READY").as_deref(), Some("True"), "{table}");
    assert_eq!(column("DEPLOYED").as_deref(), Some("False"), "{table}");

    // Deploy, the way `berth deploy` and POST /deployments do: an attempt of the spec now.
    let resource = api.get("truth").await.unwrap();
    let name = format!("dep-truth-manual-{}", random_suffix());
    let attempt = Deployment::of_resource(&name, &resource, "local".into(), None, "manual");
    ns.api::<Deployment>()
        .create(&PostParams::default(), &attempt)
        .await
        .expect("create the attempt");
    let ended = wait_ended(&ns, &name).await;
    assert_eq!(
        ended.status.and_then(|s| s.status),
        Some(DeploymentState::Succeeded)
    );
    let done = condition_when(&api, DEPLOYED, |(s, r, _)| {
        *s == ConditionStatus::True && r == "SpecDeployed"
    })
    .await;
    let state = done
        .status
        .as_ref()
        .unwrap()
        .deployed_state
        .clone()
        .unwrap();
    assert!(state.up_to_date && state.changes_not_deployed.is_empty());
    assert_eq!(state.deployment_id, name);
    assert_eq!(status_of(port, "/changed.txt").await, Some(200));
    teardown(&ns, "truth").await;
}

/// Names of the `K` objects in `namespace`.
async fn names<K>(client: &kube::Client, namespace: &str) -> Vec<String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = Api::<K>::namespaced(client.clone(), namespace);
    let listed = api.list(&ListParams::default()).await.expect("list");
    listed.items.iter().map(ResourceExt::name_any).collect()
}

async fn gone<K>(client: &kube::Client, namespace: &str, name: &str)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = Api::<K>::namespaced(client.clone(), namespace);
    let kind = K::kind(&());
    eventually_explained(WAIT, &format!("{kind} {name} removed"), || async {
        match api.get_opt(name).await {
            Ok(None) => Ok(()),
            Ok(Some(left)) => Err(format!(
                "still there, owned by {:?}",
                left.meta().owner_references
            )),
            Err(error) => Err(error.to_string()),
        }
    })
    .await;
}

async fn delete<K>(client: &kube::Client, namespace: &str, name: &str)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Api::<K>::namespaced(client.clone(), namespace)
        .delete(name, &DeleteParams::background())
        .await
        .expect("delete");
}

#[tokio::test]
async fn what_berth_makes_for_an_object_goes_with_it_and_data_volumes_stay() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let namespace = org.namespace.clone();
    let ns = TestNamespace::adopt(&client, &namespace);
    // A server the user applied (no edge proxy: nothing to deploy here).
    create_credential(&ns, "key", &stack_key().0).await;
    let host = berth_tests::stack_env("BERTH_SSH_HOST");
    let ssh_port = berth_tests::stack_env("BERTH_SSH_PORT").parse().unwrap();
    create_server(&ns, "srv-gone", &host, ssh_port, "key", json!({})).await;
    let project_id = project(&admin, &format!("Owners {}", random_suffix())).await;
    let environment_id = environment(&admin, &project_id, "prod").await;
    let resource = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": "owned", "namespace": namespace },
        "spec": {
            "projectId": project_id, "environmentId": environment_id,
            "name": "owned", "kind": "application",
        },
    });
    apply(&resource.to_string());
    let volume = admin
        .post(
            "/storage-volumes",
            json!({"projectId": project_id, "environmentId": environment_id,
                   "name": "data", "kind": "named-volume"}),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Made over REST for each scope, and for the resource: a domain binding.
    let rule =
        json!({"signal": "memory", "metric": "usedBytes", "warning": 1e17, "critical": 1e18});
    let scopes: [(String, Value); 4] = [
        (
            "server-srv-gone".into(),
            json!({"kind": "server", "serverId": "srv-gone"}),
        ),
        (
            "resource-owned".into(),
            json!({"kind": "resource", "resourceId": "owned"}),
        ),
        (
            format!("environment-{environment_id}"),
            json!({"kind": "environment", "environmentId": environment_id}),
        ),
        (
            format!("project-{project_id}"),
            json!({"kind": "project", "projectId": project_id}),
        ),
    ];
    for (name, scope) in &scopes {
        eventually_explained(WAIT, &format!("threshold policy {name}"), || async {
            let reply = admin
                .post(
                    "/runtime-monitoring/thresholds",
                    json!({"scope": scope, "rules": [rule]}),
                )
                .await;
            (reply.status == 200)
                .then_some(())
                .ok_or(format!("{} {}", reply.status, reply.body))
        })
        .await;
    }
    let binding = admin
        .post(
            "/domain-bindings",
            json!({"projectId": project_id, "environmentId": environment_id,
                   "resourceId": "owned", "domainName": format!("owned-{}.berth.test", random_suffix()),
                   "tlsMode": "disabled"}),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let policies = names::<ThresholdPolicy>(&client, &namespace).await;
    for (name, _) in &scopes {
        assert!(policies.contains(name), "{policies:?}");
    }

    // Each owner deleted in turn; what Berth made for it goes with it.
    delete::<Server>(&client, &namespace, "srv-gone").await;
    gone::<Server>(&client, &namespace, "srv-gone").await;
    gone::<ThresholdPolicy>(&client, &namespace, "server-srv-gone").await;
    delete::<Resource>(&client, &namespace, "owned").await;
    gone::<Resource>(&client, &namespace, "owned").await;
    gone::<ThresholdPolicy>(&client, &namespace, "resource-owned").await;
    gone::<DomainBinding>(&client, &namespace, &binding).await;
    delete::<Environment>(&client, &namespace, &environment_id).await;
    gone::<ThresholdPolicy>(&client, &namespace, &scopes[2].0).await;
    delete::<Project>(&client, &namespace, &project_id).await;
    gone::<ThresholdPolicy>(&client, &namespace, &scopes[3].0).await;

    // Left: nothing but what the user keeps.
    let left = [
        (
            "ThresholdPolicy",
            names::<ThresholdPolicy>(&client, &namespace).await,
        ),
        (
            "DomainBinding",
            names::<DomainBinding>(&client, &namespace).await,
        ),
        ("Deployment", names::<Deployment>(&client, &namespace).await),
        ("Resource", names::<Resource>(&client, &namespace).await),
    ];
    for (kind, objects) in &left {
        assert!(objects.is_empty(), "{kind} left behind: {objects:?}");
    }
    let volumes = names::<StorageVolume>(&client, &namespace).await;
    assert_eq!(volumes, [volume], "the data volume is kept on purpose");
    drop(org);
}
