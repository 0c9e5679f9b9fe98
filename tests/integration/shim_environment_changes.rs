//! Resources, projects and environments changed over REST on the real stack: the whole
//! resource record, archive and restore, environment variables reaching the container on the
//! next deploy, a locked environment refusing deployments and changes, rename, clone, diff and
//! promote, and other organizations' ids answering 404.

use berth_crds::config::environment_secret_name;
use berth_crds::member::OrganizationRole;
use berth_tests::client;
use berth_tests::rest::TestOrg;
use k8s_openapi::api::core::v1::Secret;
use serde_json::json;

use crate::deploy_support::{delete_resource, docker_names, ready_server, remove_server};
use crate::shim_deployment_attempts::{deployed, ended, start};
use crate::shim_projects_envs::{environment, invalid, project};

/// The environment variables of a running container.
fn container_env(name: &str) -> Vec<String> {
    let output = std::process::Command::new("docker")
        .args(["inspect", "--format", "{{json .Config.Env}}", name])
        .output()
        .expect("docker CLI (tests only)");
    serde_json::from_slice(&output.stdout).unwrap_or_default()
}

/// The environment's secrets are kept in one Kubernetes Secret owned by the Environment, so
/// they go when it goes; the Secret holds both keys.
async fn secret_owned_by_the_environment(
    client: &kube::Client,
    namespace: &str,
    environment: &str,
) {
    let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
    let secret = secrets
        .get(&environment_secret_name(environment))
        .await
        .expect("the environment's Secret");
    let owner = secret.metadata.owner_references.unwrap_or_default();
    assert!(
        owner
            .iter()
            .any(|o| o.kind == "Environment" && o.name == environment),
        "owners: {owner:?}"
    );
    let keys: Vec<&String> = secret.data.iter().flatten().map(|(k, _)| k).collect();
    assert!(
        ["SHARED_TOKEN", "API_TOKEN"]
            .iter()
            .all(|k| keys.iter().any(|key| key.ends_with(k))),
        "keys: {keys:?}"
    );
}

#[tokio::test]
async fn environment_variables_locks_and_archives_govern_what_deploys() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let source = json!({"kind": "docker-image", "locator": "berth/sample-app:1"});
    let (id, host) = deployed(&member, &server, source, "/healthz").await;

    // The whole record.
    let detail = member.get(&format!("/resources/{id}")).await.ok();
    assert_eq!(detail["schemaVersion"], "resources.show/v1");
    assert_eq!(detail["resource"]["serverId"], server);
    assert_eq!(detail["source"]["imageName"], "berth/sample-app");
    assert_eq!(detail["source"]["imageTag"], "1");
    assert_eq!(detail["healthPolicy"]["http"]["path"], "/healthz");
    assert_eq!(detail["latestDeployment"]["status"], "succeeded");
    assert_eq!(detail["runtime"]["lifecycle"], "running");
    assert_eq!(detail["lifecycle"]["status"], "active");
    assert_eq!(detail["autoDeployPolicy"]["status"], "disabled");
    let environment_id = detail["resource"]["environmentId"]
        .as_str()
        .unwrap()
        .to_string();
    let env_path = format!("/environments/{environment_id}");

    // An environment variable reaches the container on the next deploy.
    let set = format!("{env_path}/variables");
    invalid(
        member
            .post(&set, json!({"key": "1BAD", "value": "x"}))
            .await,
        "key",
    );
    invalid(
        member
            .post(&set, json!({"key": "A", "value": "x", "exposure": "both"}))
            .await,
        "exposure",
    );
    invalid(
        member
            .post(&set, json!({"key": "A", "value": "x", "kind": "file"}))
            .await,
        "kind",
    );
    // Secrets of the environment: kept in its Secret, shown masked, given to its resources
    // unless a resource sets its own.
    let (shared, own) = ("env-shared-s3cr3t-value", "resource-own-s3cr3t-value");
    for key in ["SHARED_TOKEN", "API_TOKEN"] {
        let answer = member
            .post(&set, json!({"key": key, "value": shared, "isSecret": true}))
            .await
            .ok();
        assert!(answer.is_null(), "{answer}");
    }
    member
        .post(
            &format!("/resources/{id}/secrets"),
            json!({"key": "API_TOKEN", "value": own}),
        )
        .await
        .ok();
    let answer = member
        .post(&set, json!({"key": "GREETING", "value": "from the environment", "exposure": "runtime", "kind": "plain-config"}))
        .await
        .ok();
    assert!(answer.is_null(), "{answer}");
    secret_owned_by_the_environment(&client, &org.namespace, &environment_id).await;
    let shown = member.get(&env_path).await.ok();
    assert_eq!(shown["maskedVariables"][0]["key"], "GREETING");
    let secret_shown = shown["maskedVariables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["key"] == "SHARED_TOKEN")
        .cloned()
        .unwrap();
    assert_eq!(
        (&secret_shown["value"], &secret_shown["isSecret"]),
        (&json!("****"), &json!(true))
    );
    let effective = member
        .get(&format!("/resources/{id}/effective-config"))
        .await
        .ok()
        .to_string();
    assert!(
        !effective.contains(shared) && !shown.to_string().contains(shared),
        "a secret value in a response"
    );
    let attempt = start(&member, &id).await;
    assert_eq!(ended(&member, &attempt).await["status"], "succeeded");
    let container = docker_names(&format!("label=berth.dev/deployment={attempt}"));
    let env = container_env(&container[0]);
    for expected in [
        "GREETING=from the environment".to_string(),
        format!("SHARED_TOKEN={shared}"),
        format!("API_TOKEN={own}"),
    ] {
        assert!(
            env.contains(&expected),
            "{expected} not in the container's env"
        );
    }
    member
        .delete(&format!("{set}/SHARED_TOKEN"), json!({}))
        .await
        .ok();
    let after = member.get(&env_path).await.ok();
    assert!(!after.to_string().contains("SHARED_TOKEN"), "{after}");
    member
        .delete(&format!("{set}/GREETING"), json!({}))
        .await
        .ok();
    member
        .delete(&format!("{set}/GREETING"), json!({}))
        .await
        .error(404, "not_found");

    // Locked: deployments and changes are refused with the reason, until unlocked.
    member
        .post(
            &format!("{env_path}/lock"),
            json!({"reason": "release freeze"}),
        )
        .await
        .error(403, "forbidden");
    admin
        .post(
            &format!("{env_path}/lock"),
            json!({"reason": "release freeze"}),
        )
        .await
        .ok();
    let locked = member.get(&env_path).await.ok();
    assert_eq!(locked["lockReason"], "release freeze");
    let record = member.get(&format!("/resources/{id}")).await.ok()["resource"].clone();
    let deploy = json!({
        "projectId": record["projectId"], "environmentId": environment_id,
        "resourceId": id, "serverId": server,
    });
    let refused = member.post("/deployments", deploy.clone()).await;
    let error = refused.error(409, "environment_locked");
    assert_eq!(error["details"]["lockReason"], "release freeze");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("release freeze")
    );
    member
        .post(
            &format!("/resources/{id}/variables"),
            json!({"key": "X", "value": "1", "exposure": "runtime"}),
        )
        .await
        .error(409, "environment_locked");
    member
        .post(&set, json!({"key": "X", "value": "1"}))
        .await
        .error(409, "environment_locked");
    member
        .post(
            &format!("/resources/{id}/redeploy"),
            json!({"confirmation": {"resourceId": id}}),
        )
        .await
        .error(409, "environment_locked");
    admin
        .post(&format!("{env_path}/unlock"), json!({}))
        .await
        .ok();
    assert!(member.get(&env_path).await.ok().get("lockReason").is_none());

    // Archived: refused likewise; restored: it deploys again.
    member
        .post(
            &format!("/resources/{id}/archive"),
            json!({"reason": "moved"}),
        )
        .await
        .ok();
    let archived = member.get(&format!("/resources/{id}")).await.ok();
    assert_eq!(archived["lifecycle"]["status"], "archived");
    assert_eq!(archived["lifecycle"]["archiveReason"], "moved");
    let refused = member.post("/deployments", deploy.clone()).await;
    assert_eq!(
        refused.error(409, "resource_archived")["details"]["blockedReason"],
        "resource-archived"
    );
    invalid(
        member
            .post(
                &format!("/resources/{id}/archive"),
                json!({"reason": "x".repeat(281)}),
            )
            .await,
        "reason",
    );
    member
        .post(&format!("/resources/{id}/restore"), json!({}))
        .await
        .ok();
    let created = member
        .post("/deployments", deploy.clone())
        .await
        .expect(201);
    let again = created["id"].as_str().unwrap();
    assert_eq!(ended(&member, again).await["status"], "succeeded");

    // Another organization sees none of it.
    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .get(&format!("/resources/{id}"))
        .await
        .error(404, "not_found");
    for path in ["archive", "restore"] {
        outsider
            .post(&format!("/resources/{id}/{path}"), json!({}))
            .await
            .error(404, "not_found");
    }
    for path in ["lock", "unlock"] {
        outsider
            .post(&format!("{env_path}/{path}"), json!({}))
            .await
            .error(404, "not_found");
    }
    outsider
        .post(&set, json!({"key": "A", "value": "1"}))
        .await
        .error(404, "not_found");

    delete_resource(&admin, &id, &host.replace(".localhost", "")).await;
    remove_server(&admin, &server).await;
}

#[tokio::test]
async fn environments_are_renamed_cloned_diffed_and_promoted_and_projects_restored() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&member, "Shop").await;
    let staging = environment(&member, &shop, "staging").await;
    let production = environment(&member, &shop, "production").await;
    let set = |env: &str| format!("/environments/{env}/variables");
    for (env, key, value) in [
        (&staging, "MODE", "fast"),
        (&staging, "API_TOKEN", "staging-secret-value"),
        (&staging, "NEW_FLAG", "on"),
        (&production, "MODE", "fast"),
        (&production, "API_TOKEN", "production-secret-value"),
        (&production, "ONLY_PROD", "1"),
    ] {
        member
            .post(&set(env), json!({"key": key, "value": value}))
            .await
            .ok();
    }

    // Rename: unique among the project's active environments.
    member
        .post(
            &format!("/environments/{staging}/rename"),
            json!({"name": "production"}),
        )
        .await
        .error(409, "conflict");
    invalid(
        member
            .post(
                &format!("/environments/{staging}/rename"),
                json!({"name": ""}),
            )
            .await,
        "name",
    );
    member
        .post(
            &format!("/environments/{staging}/rename"),
            json!({"name": "stage"}),
        )
        .await
        .ok();
    assert_eq!(
        member.get(&format!("/environments/{staging}")).await.ok()["name"],
        "stage"
    );

    // Diff, masked: what promoting staging into production would change.
    let diff = member
        .get(&format!("/environments/{staging}/diff/{production}"))
        .await
        .ok();
    let change = |key: &str| {
        diff.as_array()
            .unwrap()
            .iter()
            .find(|d| d["key"] == key)
            .unwrap()["change"]
            .clone()
    };
    assert_eq!(change("MODE"), "unchanged");
    assert_eq!(change("API_TOKEN"), "changed");
    assert_eq!(change("NEW_FLAG"), "removed");
    assert_eq!(change("ONLY_PROD"), "added");
    assert!(!diff.to_string().contains("secret-value"), "{diff}");

    // Promote: confirmed; the target gets staging's entries and keeps its own others.
    let promote = format!("/environments/{staging}/promote");
    invalid(
        member
            .post(&promote, json!({"targetEnvironmentId": production}))
            .await,
        "confirmation.environmentId",
    );
    let body =
        json!({"targetEnvironmentId": production, "confirmation": {"environmentId": production}});
    let promoted = member.post(&promote, body.clone()).await.ok();
    assert_eq!(promoted["id"], production);
    let after = member
        .get(&format!("/environments/{staging}/diff/{production}"))
        .await
        .ok();
    assert!(
        after
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["change"] == "unchanged" || d["key"] == "ONLY_PROD"),
        "{after}"
    );
    // A locked target refuses it.
    admin
        .post(&format!("/environments/{production}/lock"), json!({}))
        .await
        .ok();
    member
        .post(&promote, body)
        .await
        .error(409, "environment_locked");
    admin
        .post(&format!("/environments/{production}/unlock"), json!({}))
        .await
        .ok();

    // Clone and promote into a new environment copy the variables, secret values included.
    member
        .post(
            &set(&staging),
            json!({"key": "SIGNING_KEY", "value": "staging-signing-s3cr3t", "isSecret": true}),
        )
        .await
        .ok();
    let cloned = member
        .post(
            &format!("/environments/{staging}/clone"),
            json!({"targetName": "stage-2"}),
        )
        .await
        .expect(201);
    let clone_id = cloned["id"].as_str().unwrap();
    let copy = member.get(&format!("/environments/{clone_id}")).await.ok();
    assert_eq!(copy["kind"], "preview");
    let copied = copy["maskedVariables"].as_array().unwrap();
    assert_eq!(copied.len(), 4, "{copy}");
    let signing = copied.iter().find(|v| v["key"] == "SIGNING_KEY").unwrap();
    assert_eq!(
        (&signing["value"], &signing["isSecret"]),
        (&json!("****"), &json!(true))
    );
    invalid(
        member
            .post(
                &format!("/environments/{staging}/clone"),
                json!({"targetName": "x", "targetKind": "prod"}),
            )
            .await,
        "targetKind",
    );
    let fresh = member
        .post(
            &promote,
            json!({"targetName": "canary", "targetKind": "production"}),
        )
        .await
        .expect(201);
    let canary = member
        .get(&format!("/environments/{}", fresh["id"].as_str().unwrap()))
        .await
        .ok();
    assert_eq!(canary["kind"], "production");

    // A project archived and restored.
    admin
        .delete(
            &format!("/projects/{shop}"),
            json!({"confirmation": {"projectId": shop}}),
        )
        .await
        .ok();
    assert_eq!(
        member.get(&format!("/projects/{shop}")).await.ok()["lifecycleStatus"],
        "archived"
    );
    member
        .post(&format!("/projects/{shop}/restore"), json!({}))
        .await
        .error(403, "forbidden");
    admin
        .post(&format!("/projects/{shop}/restore"), json!({}))
        .await
        .ok();
    let restored = member.get(&format!("/projects/{shop}")).await.ok();
    assert_eq!(restored["lifecycleStatus"], "active");
    assert!(restored.get("archivedAt").is_none(), "{restored}");

    let mut other = TestOrg::new(&client).await;
    let outsider = other.user(OrganizationRole::Owner).await.rest;
    outsider
        .get(&format!("/environments/{staging}/diff/{production}"))
        .await
        .error(404, "not_found");
    outsider
        .post(&format!("/projects/{shop}/restore"), json!({}))
        .await
        .error(404, "not_found");
    outsider
        .post(
            &format!("/environments/{staging}/clone"),
            json!({"targetName": "x"}),
        )
        .await
        .error(404, "not_found");
}

/// Issue 45's lifecycle rules: a lock answers its `lockedAt` at once; a locked environment
/// is not cloned (409 with the lock's reason) until unlocked; an archived one is not locked.
#[tokio::test]
async fn a_locked_environment_is_not_cloned_and_an_archived_one_not_locked() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let shop = project(&member, "Shop").await;
    let staging = environment(&member, &shop, "staging").await;
    let path = format!("/environments/{staging}");

    // The lock's time comes back with the first read after it, not once the controller ran.
    let before = k8s_openapi::jiff::Timestamp::now();
    admin
        .post(&format!("{path}/lock"), json!({"reason": "release freeze"}))
        .await
        .ok();
    let locked = member.get(&path).await.ok();
    let at: k8s_openapi::jiff::Timestamp = locked["lockedAt"]
        .as_str()
        .unwrap_or_else(|| panic!("lockedAt with the lock: {locked}"))
        .parse()
        .unwrap();
    let after = k8s_openapi::jiff::Timestamp::now();
    // Whole seconds on the wire.
    assert!(
        at.as_second() >= before.as_second() && at <= after,
        "{at} not within the request"
    );
    assert_eq!(locked["lockReason"], "release freeze");

    let clone = format!("{path}/clone");
    let refused = member
        .post(&clone, json!({"targetName": "copy"}))
        .await
        .error(409, "environment_locked");
    assert_eq!(refused["details"]["lockReason"], "release freeze");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("release freeze"),
        "{refused}"
    );
    admin.post(&format!("{path}/unlock"), json!({})).await.ok();
    let unlocked = member.get(&path).await.ok();
    assert!(unlocked.get("lockedAt").is_none(), "{unlocked}");
    member
        .post(&clone, json!({"targetName": "copy"}))
        .await
        .expect(201);

    admin
        .post(&format!("{path}/archive"), json!({"reason": "done"}))
        .await
        .ok();
    let refused = admin
        .post(&format!("{path}/lock"), json!({"reason": "late"}))
        .await
        .error(409, "environment_archived");
    assert_eq!(refused["details"]["environmentId"], staging.as_str());
    // With the reason it was archived for, in the details and the message.
    assert_eq!(refused["details"]["archiveReason"], "done", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("(done)"),
        "{refused}"
    );
    let archived = member.get(&path).await.ok();
    assert!(archived.get("lockedAt").is_none(), "{archived}");
    assert!(archived.get("lockReason").is_none(), "{archived}");
}
