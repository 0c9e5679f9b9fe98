//! Platform migration (spec §4.9) against the running shim, controller and a real server: a
//! bundle planned, applied as a `Migration` task, verified through the edge, resumed after a
//! lost receipt without duplicates, cleaned up; and every refusal (edited plan, wrong digest,
//! forged receipt, blocked plan, a caller without the rights of a step) creating nothing.

use berth_crds::member::OrganizationRole;
use berth_crds::migration::Migration;
use berth_crds::project::Project;
use berth_crds::resource::Resource;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, eventually_explained, kubectl, random_suffix};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

use crate::deploy_support::{
    WAIT, assert_never_shown, docker_names, ready_server, remove_server, wait_body,
};
use crate::shim_account::deploy_token;
use crate::shim_projects_envs::project;

#[path = "migrations_dependencies.rs"]
mod dependencies;
#[path = "migrations_stream.rs"]
mod stream;

const SECRET: &str = "migr-s3cr3t-value-4711";

/// A web app with a domain, a worker, a database with a volume, variables and a secret.
fn bundle(server: &str, domain: &str) -> Value {
    let image = json!({"kind": "docker-image", "locator": "berth/sample-app:1"});
    json!({
        "apiVersion": "appaloft.io/migration/v1", "kind": "MigrationBundle",
        "metadata": {"name": "shop", "source": {"provider": "compose"}},
        "spec": {
            "project": {"name": "Shop"},
            "environment": {"name": "production", "kind": "production"},
            "target": {"deploymentTargetId": server},
            "resources": [
                {"ref": "web", "name": "Web", "source": image,
                 "network": {"internalPort": 8080}, "runtime": {"healthCheckPath": "/healthz"}},
                {"ref": "worker", "name": "Worker", "kind": "worker", "source": image},
                {"ref": "db", "name": "DB", "kind": "database", "source": image},
            ],
            "variables": [
                {"key": "APP_MODE", "value": "production", "exposure": "runtime"},
                {"key": "GREETING", "value": "hello", "exposure": "runtime", "resourceRef": "web"},
                {"key": "SESSION_SECRET", "secretRef": "env://SESSION_SECRET",
                 "exposure": "runtime", "kind": "secret", "resourceRef": "web"},
            ],
            "volumes": [{"ref": "data", "name": "DB data", "resourceRef": "db", "mountPath": "/data"}],
            "domains": [{"hostname": domain, "resourceRef": "web", "tlsPolicy": "disabled"}],
        }
    })
}

async fn plan(rest: &Rest, bundle: &Value) -> Value {
    rest.post("/migrations/plan", json!({ "bundle": bundle }))
        .await
        .ok()
}

fn apply_body(plan: &Value, receipts: &Value) -> Value {
    json!({
        "plan": plan, "confirmedPlanDigest": plan["planDigest"], "priorReceipts": receipts,
        "secretValues": {"env://SESSION_SECRET": SECRET},
    })
}

async fn verify(rest: &Rest, plan: &Value, receipts: &Value) -> Value {
    let body = json!({"plan": plan, "receipts": receipts});
    rest.post("/migrations/verify", body).await.ok()
}

/// Waits until verify's verdict is `state`; returns the answer. A deploy under the suite's
/// full load can take longer than one alone.
async fn verdict(rest: &Rest, plan: &Value, receipts: &Value, state: &str) -> Value {
    eventually_explained(WAIT * 2, &format!("verify {state}"), || async {
        let answer = verify(rest, plan, receipts).await;
        if answer["state"] == state {
            return Ok(answer);
        }
        let pending: Vec<&Value> = answer["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["evaluation"] != "passed" && e["evaluation"] != "observed")
            .collect();
        Err(format!(
            "state {}; not passed: {pending:?}",
            answer["state"]
        ))
    })
    .await
}

/// Waits until every read of verify but the backup lists passes (or is only observed);
/// returns the answer.
async fn verdict_but_backups(rest: &Rest, plan: &Value, receipts: &Value) -> Value {
    let is_backup_list = |e: &Value| {
        let name = e["queryName"].as_str().unwrap_or_default();
        name.starts_with("List") && name.ends_with("BackupsQuery")
    };
    eventually_explained(WAIT * 2, "verify passed but for backups", || async {
        let answer = verify(rest, plan, receipts).await;
        let pending: Vec<&Value> = answer["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| !is_backup_list(e))
            .filter(|e| e["evaluation"] != "passed" && e["evaluation"] != "observed")
            .collect();
        let read = answer["evidence"].as_array().is_some_and(|e| !e.is_empty());
        if pending.is_empty() && read {
            return Ok(answer.clone());
        }
        Err(format!("not passed: {pending:?}"))
    })
    .await
}

/// The evidence of verify's `query`.
pub(crate) fn evidence_of<'a>(answer: &'a Value, query: &str) -> &'a Value {
    answer["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["queryName"] == query)
        .unwrap_or_else(|| panic!("{query} in {answer}"))
}

/// A backup of the migrated volume to a directory on `server`, waited for until proven.
async fn back_up_volume(admin: &Rest, server: &str, receipts: &Value) {
    let volume = receipts
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| r["output"]["storageVolumeId"].as_str())
        .expect("the migrated volume's id");
    let directory = format!("/tmp/berth-test-migration-backups/{volume}");
    let target =
        json!({"name": "Here", "kind": "server-directory", "serverId": server, "path": directory});
    admin.post("/backup-targets", target).await.expect(201);
    let path = format!("/storage-volumes/{volume}/backups");
    let created = admin
        .post(&path, json!({"serverId": server}))
        .await
        .expect(201);
    let id = created["id"].as_str().unwrap().to_string();
    eventually(WAIT * 2, "the volume backup proven", || async {
        let shown = admin
            .get(&format!("/storage-volume-backups/{id}"))
            .await
            .ok();
        let status = shown["backup"]["status"].clone();
        assert_ne!(status, "failed", "{shown}");
        (status == "ready").then_some(())
    })
    .await;
}

async fn names<K>(client: &Client, namespace: &str) -> Vec<String>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = Api::<K>::namespaced(client.clone(), namespace);
    let mut names: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(kube::ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_bundle_is_planned_applied_verified_resumed_and_cleaned_up() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, port) = ready_server(&owner).await;
    let existing = project(&owner, "Shop").await;
    let domain = format!("shop{}.localhost", random_suffix());
    let planned = plan(&member, &bundle(&server, &domain)).await;
    assert_eq!(planned["state"], "ready", "{planned}");
    assert!(
        planned["attestation"]
            .as_str()
            .unwrap()
            .starts_with("hmac-sha256:")
    );

    let applied = member
        .post("/migrations/apply", apply_body(&planned, &json!([])))
        .await
        .ok();
    assert_eq!(applied["state"], "completed", "{applied}");
    let receipts = applied["receipts"].clone();
    assert_eq!(
        receipts.as_array().unwrap().len(),
        planned["steps"].as_array().unwrap().len()
    );
    assert_eq!(receipts[0]["stepId"], "project:create");
    assert_eq!(
        receipts[0]["ownership"], "reused",
        "the existing project is reused"
    );
    assert_eq!(receipts[0]["output"]["projectId"], existing.as_str());
    let task = applied["migrationName"].as_str().unwrap().to_string();
    let shown = kubectl(
        &["get", "bmig", &task, "-n", &org.namespace, "-o", "json"],
        None,
    );
    let object: Value = serde_json::from_slice(&shown.stdout).expect("kubectl get bmig");
    assert_eq!(object["status"]["phase"], "applied", "{object}");

    // The app answers through the edge under its migrated domain, and verify says so, and that
    // the migrated volume has no backup yet; once it has one (proven), verify passes.
    wait_body(port, &domain, "sample-app v1").await;
    let unsaved = verdict_but_backups(&member, &planned, &receipts).await;
    assert_eq!(unsaved["state"], "attention", "{unsaved}");
    let backups = evidence_of(&unsaved, "ListStorageVolumeBackupsQuery");
    assert_eq!(backups["evaluation"], "attention", "{backups}");
    assert_eq!(backups["summary"]["itemCount"], 0, "{backups}");
    back_up_volume(&owner, &server, &receipts).await;
    let passed = verdict(&member, &planned, &receipts, "passed").await;
    let queries: Vec<&str> = passed["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["queryName"].as_str().unwrap())
        .collect();
    for query in [
        "ResourceHealthQuery",
        "ShowDeploymentQuery",
        "ShowDomainBindingQuery",
        "EffectiveConfigQuery",
    ] {
        assert!(queries.contains(&query), "{query} in {passed}");
    }

    status_answers_for_the_receipts_sent(&member, &planned, &receipts).await;
    lost_receipts_are_resumed_without_duplicates(&client, &org, &member, &planned, &receipts).await;
    killed_app_needs_attention(&member, &planned, &receipts).await;
    cleanup_removes_only_what_was_created(
        &client, &org, &owner, &member, &planned, &receipts, &existing,
    )
    .await;
    assert_never_shown(SECRET, &[&String::from_utf8_lossy(&shown.stdout)]);
    remove_server(&owner, &server).await;
}

/// Status reads back the receipts a client sends (Appaloft's contract), not the server's: the
/// first three give `partial` with the rest pending; none at all is a 400.
async fn status_answers_for_the_receipts_sent(member: &Rest, planned: &Value, receipts: &Value) {
    let all = receipts.as_array().unwrap();
    let steps: Vec<&str> = planned["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let status = |sent: Value| {
        member.post(
            "/migrations/status",
            json!({"plan": planned, "receipts": sent}),
        )
    };
    let first_three = status(json!(all[..3])).await.ok();
    assert_eq!(first_three["state"], "partial", "{first_three}");
    assert_eq!(first_three["completedStepIds"], json!(steps[..3]));
    assert_eq!(first_three["pendingStepIds"], json!(steps[3..]));
    // One read-back (show query) per receipt sent, each naming its step and query.
    let evidence = first_three["evidence"].as_array().unwrap();
    let read_back: Vec<&str> = evidence
        .iter()
        .map(|e| e["stepId"].as_str().unwrap())
        .collect();
    assert_eq!(read_back, steps[..3], "{first_three}");
    assert!(
        evidence.iter().all(|e| e["queryName"].as_str().is_some()),
        "{first_three}"
    );
    let every = status(receipts.clone()).await.ok();
    assert_eq!(every["state"], "complete", "{every}");
    assert_eq!(every["pendingStepIds"], json!([]));
    let refused = status(json!([])).await.error(400, "validation_error");
    assert_eq!(refused["details"]["field"], "receipts", "{refused}");
    assert_eq!(refused["details"]["phase"], "migration-readback-validation");
}

/// As if the shim died after running the last steps but before recording them: apply again
/// runs them again, naming the same objects, and creates nothing twice.
async fn lost_receipts_are_resumed_without_duplicates(
    client: &Client,
    org: &TestOrg,
    member: &Rest,
    planned: &Value,
    receipts: &Value,
) {
    let resources = names::<Resource>(client, &org.namespace).await;
    let deployments = names::<berth_crds::deployment::Deployment>(client, &org.namespace).await;
    let all = receipts.as_array().unwrap();
    let kept: Vec<Value> = all[..all.len() - 6].to_vec();
    let task = Api::<Migration>::namespaced(client.clone(), &org.namespace);
    let name = berth_tests::eventually(WAIT, "the task", || async {
        task.list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .next()
    })
    .await;
    let name = kube::ResourceExt::name_any(&name);
    task.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"receipts": kept}})),
    )
    .await
    .unwrap();
    // The client still holds all receipts: the server no longer issued the last six.
    let refused = member
        .post("/migrations/apply", apply_body(planned, receipts))
        .await
        .expect(422);
    assert_eq!(refused["error"]["code"], "validation_error", "{refused}");
    let resumed = member
        .post("/migrations/apply", apply_body(planned, &json!(kept)))
        .await
        .ok();
    assert_eq!(resumed["state"], "completed", "{resumed}");
    assert_eq!(
        &resumed["receipts"], receipts,
        "the same objects, the same receipts"
    );
    assert_eq!(names::<Resource>(client, &org.namespace).await, resources);
    let after = names::<berth_crds::deployment::Deployment>(client, &org.namespace).await;
    assert_eq!(after, deployments, "no second deployment");
}

/// The web app's container killed: verify is no longer `passed`.
async fn killed_app_needs_attention(member: &Rest, planned: &Value, receipts: &Value) {
    let web = receipts
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["stepId"] == "resource:create:web")
        .unwrap()["output"]["resourceId"]
        .as_str()
        .unwrap()
        .to_string();
    // Stopped on request, so the controller does not bring it back before verify looks.
    member
        .post(
            &format!("/resources/{web}/runtime-control"),
            json!({"operation": "stop"}),
        )
        .await
        .expect(202);
    let filter = format!("label=berth.dev/resource={web}");
    assert!(
        !docker_names(&filter).is_empty(),
        "the web container exists"
    );
    let answer = verdict(member, planned, receipts, "attention").await;
    let health = answer["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["queryName"] == "ResourceHealthQuery" && e["stepId"] == "resource:create:web")
        .cloned()
        .unwrap();
    assert_eq!(health["evaluation"], "attention", "{answer}");
}

#[allow(clippy::too_many_arguments)]
async fn cleanup_removes_only_what_was_created(
    client: &Client,
    org: &TestOrg,
    owner: &Rest,
    member: &Rest,
    planned: &Value,
    receipts: &Value,
    existing: &str,
) {
    let body = |data_loss: bool| {
        json!({"plan": planned, "receipts": receipts,
               "confirmedPlanDigest": planned["planDigest"], "confirmDataLoss": data_loss})
    };
    member
        .post("/migrations/cleanup", body(true))
        .await
        .error(403, "forbidden");
    // Without the data-loss confirmation, it stops at the database (its volume waits too).
    let partial = owner.post("/migrations/cleanup", body(false)).await.ok();
    assert_eq!(partial["state"], "partial", "{partial}");
    assert_eq!(
        partial["failure"]["code"],
        "migration_cleanup_data_loss_unconfirmed"
    );
    // Asked again unconfirmed, it answers as it did: the undone steps stay undone.
    let repeated = owner.post("/migrations/cleanup", body(false)).await.ok();
    for field in ["state", "failure", "remainingStepIds"] {
        assert_eq!(repeated[field], partial[field], "{field}: {repeated}");
    }
    assert_eq!(repeated["actions"], json!([]), "{repeated}");
    let done = owner.post("/migrations/cleanup", body(true)).await.ok();
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["skippedStepIds"], json!(["project:create"]));
    let again = owner.post("/migrations/cleanup", body(true)).await.ok();
    assert_eq!(
        (again["state"].clone(), again["actions"].clone()),
        (json!("completed"), json!([]))
    );
    eventually(WAIT, "the migrated resources gone", || async {
        names::<Resource>(client, &org.namespace)
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    let projects = Api::<Project>::namespaced(client.clone(), &org.namespace);
    let kept = projects
        .get(existing)
        .await
        .expect("the project that existed is kept");
    assert!(
        !kept.spec.archived,
        "cleanup never archives a reused project"
    );
}

#[tokio::test]
async fn refused_plans_and_receipts_create_nothing() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await.rest;
    let planned = plan(&member, &bundle("srv-anywhere", "shop.localhost")).await;
    let apply = |body: Value| member.post("/migrations/apply", body);

    // A wrong confirmation, an edited plan (digest recomputed), a forged receipt.
    let mut wrong = apply_body(&planned, &json!([]));
    wrong["confirmedPlanDigest"] = json!(format!("sha256:{}", "0".repeat(64)));
    let refused = apply(wrong)
        .await
        .error(422, "migration_plan_digest_mismatch");
    assert_eq!(refused["details"]["field"], "confirmedPlanDigest");
    let mut edited: berth_api::migrations::MigrationPlan =
        serde_json::from_value(planned.clone()).unwrap();
    edited.steps[0]
        .input
        .insert("name".into(), json!("Someone else's"));
    edited.plan_digest = berth_migrate::plan::plan_digest(&edited);
    let edited = serde_json::to_value(&edited).unwrap();
    apply(apply_body(&edited, &json!([])))
        .await
        .error(422, "migration_plan_not_attested");
    let forged = json!([{"stepId": "project:create", "operationKey": "projects.create",
        "state": "completed", "output": {"projectId": "prj-victim"}, "ownership": "created"}]);
    let refused = apply(apply_body(&planned, &forged))
        .await
        .error(422, "validation_error");
    assert_eq!(refused["details"]["field"], "priorReceipts[0]", "{refused}");

    // A blocked plan (no server to deploy to), and bad bundles, named by field.
    let blocked = plan(&member, &bundle("", "shop.localhost")).await;
    assert_eq!(blocked["state"], "blocked", "{blocked}");
    apply(apply_body(&blocked, &json!([])))
        .await
        .error(422, "migration_plan_blocked");
    let mut unknown = bundle("srv-x", "shop.localhost");
    unknown["spec"]["resources"][0]["replicas"] = json!(2);
    let refused = member
        .post("/migrations/plan", json!({"bundle": unknown}))
        .await
        .expect(422);
    assert!(
        refused["error"]["details"]["field"]
            .as_str()
            .unwrap()
            .contains("replicas"),
        "{refused}"
    );

    // A deploy token may not create projects, directly or through a plan.
    let token = deploy_token(&client, &org).await;
    let answer = token
        .post("/migrations/apply", apply_body(&planned, &json!([])))
        .await
        .ok();
    assert_eq!(answer["state"], "failed", "{answer}");
    assert_eq!(answer["failure"]["stepId"], "project:create");
    assert_eq!(answer["failure"]["code"], "forbidden");
    // Appaloft's spelling on a step failure; `retriable` stays the error envelope's.
    assert_eq!(answer["failure"]["retryable"], false, "{answer}");
    assert!(answer["failure"].get("retriable").is_none(), "{answer}");

    assert!(names::<Project>(&client, &org.namespace).await.is_empty());
    assert!(names::<Resource>(&client, &org.namespace).await.is_empty());
}

#[tokio::test]
async fn plans_are_deterministic_and_vendor_files_are_planned_over_rest() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let member = org.user(OrganizationRole::Member).await.rest;
    let original = bundle("srv-x", "shop.localhost");
    let mut shuffled = original.clone();
    for list in ["resources", "variables"] {
        let items = shuffled["spec"][list].as_array_mut().unwrap();
        items.reverse();
    }
    let first = plan(&member, &original).await;
    assert_eq!(
        plan(&member, &shuffled).await["planDigest"],
        first["planDigest"]
    );
    let mut edited = original.clone();
    edited["spec"]["variables"][0]["value"] = json!("staging");
    assert_ne!(
        plan(&member, &edited).await["planDigest"],
        first["planDigest"]
    );

    // The Compose example, uploaded under any name: recognised by its content.
    let compose = std::fs::read_to_string(
        berth_tests::repo_root().join("examples/migrate/compose/compose.yaml"),
    )
    .unwrap();
    let source = |provider: &str, name: &str| {
        json!({"source": {"provider": provider, "files": {name: compose},
               "target": {"deploymentTargetId": "srv-x"}}})
    };
    let planned = member
        .post("/migrations/plan", source("compose", "upload-1.txt"))
        .await
        .ok();
    let steps: Vec<&str> = planned["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(steps.contains(&"resource:create:web"), "{planned}");
    assert!(steps.contains(&"deployment:create:web"), "{planned}");
    let refused = member
        .post("/migrations/plan", source("render", "compose.yaml"))
        .await
        .expect(422);
    assert_eq!(refused["error"]["details"]["field"], "source.provider");
    let mut unreadable = source("compose", "notes.txt");
    unreadable["source"]["files"]["notes.txt"] = json!("just some notes");
    let refused = member
        .post("/migrations/plan", unreadable)
        .await
        .expect(422);
    assert!(
        refused["error"]["details"]["field"]
            .as_str()
            .unwrap()
            .contains("notes.txt"),
        "{refused}"
    );
}

const CLI_SECRET: &str = "cli-migr-s3cr3t-0815";

/// The migrated resource exists and says it waits for a deployment request, and no attempt
/// was made: its variables and secrets are not all there yet.
async fn not_deployed_before_its_deployment_step(client: &Client, namespace: &str) {
    let resources = Api::<Resource>::namespaced(client.clone(), namespace);
    let waiting = eventually(
        WAIT,
        "the resource waits for its deployment step",
        || async {
            let resource = resources
                .list(&Default::default())
                .await
                .ok()?
                .items
                .pop()?;
            let ready = resource
                .status
                .as_ref()?
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready")?;
            ready
                .message
                .contains("waits for a request")
                .then_some(resource)
        },
    )
    .await;
    let attempts = Api::<berth_crds::deployment::Deployment>::namespaced(client.clone(), namespace)
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert!(
        attempts
            .iter()
            .all(|d| d.spec.resource_id != waiting.name_any()),
        "a migrated resource deployed before its deployment step"
    );
}

#[tokio::test]
async fn the_cli_migrates_a_compose_file_and_undoes_it() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let (server, _) = ready_server(&owner.rest).await;
    let berth = crate::cli::Berth::new();
    berth.login(&owner).await;
    let slug = format!("mig{}", random_suffix());
    let compose = berth.home.path().join("compose.yaml");
    let file = format!(
        "services:\n  {slug}:\n    image: berth/sample-app:1\n    ports: [\"8080:8080\"]\n    \
         environment:\n      GREETING: hello\n      SESSION_SECRET: {CLI_SECRET}\n"
    );
    std::fs::write(&compose, file).unwrap();
    let task = berth.home.path().join("task.json");
    let (compose, task) = (compose.to_str().unwrap(), task.to_str().unwrap());
    let args = [
        "migrate", "plan", "--from", "compose", compose, "--server", &server,
    ];
    let planned = berth
        .run(&[&args[..], &["--project", "Shop", "--task-file", task]].concat())
        .await
        .ok();
    assert!(
        planned.contains(&format!("resource:create:{slug}")),
        "{planned}"
    );
    assert!(planned.contains("SESSION_SECRET → secret-ref"), "{planned}");
    let digest = planned
        .lines()
        .find_map(|l| l.split("--confirm ").nth(1))
        .expect("plan prints the apply command")
        .to_string();
    let plan_file = std::fs::read_to_string(task).unwrap();
    assert!(
        !plan_file.contains(CLI_SECRET),
        "the task file holds no secret value"
    );

    // Without the secret in its environment, apply stops at that step and says why.
    let stopped = berth
        .run(&["migrate", "apply", task, "--confirm", &digest])
        .await;
    assert_eq!(stopped.code, 1, "{stopped:?}");
    assert!(stopped.stdout.contains("SESSION_SECRET"), "{stopped:?}");
    not_deployed_before_its_deployment_step(&client, &org.namespace).await;
    let env = [("SESSION_SECRET", CLI_SECRET)];
    let resumed = berth
        .run_with(
            &crate::cli::binary(),
            &["migrate", "resume", task],
            None,
            &env,
        )
        .await
        .ok();
    assert!(resumed.contains("completed"), "{resumed}");
    // A deploy under the suite's full load can take longer than one alone.
    eventually_explained(WAIT * 2, "verify passed", || async {
        let run = berth.run(&["migrate", "verify", task]).await;
        match run.code {
            0 => Ok(()),
            _ => Err(format!("{}{}", run.stdout, run.stderr)),
        }
    })
    .await;
    let status = berth
        .run(&["migrate", "status", task, "-o", "json"])
        .await
        .json();
    assert_eq!(status["state"], "complete", "{status}");

    let cleaned = berth
        .run(&["migrate", "cleanup", task, "--confirm", &digest])
        .await
        .ok();
    assert!(cleaned.contains("DeleteResource"), "{cleaned}");
    assert_never_shown(CLI_SECRET, &[&planned, &resumed, &cleaned]);
    remove_server(&owner.rest, &server).await;
}

#[tokio::test]
async fn a_migration_applied_with_kubectl_runs_and_cleans_up_the_same_way() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await.rest;
    let (server, _) = ready_server(&owner).await;
    let secret_value = "gitops-migr-s3cr3t-77";
    let secrets =
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &org.namespace);
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": "shop-secrets"}, "stringData": {"session": secret_value},
    }))
    .unwrap();
    secrets.create(&Default::default(), &secret).await.unwrap();
    let slug = format!("gitops{}", random_suffix());
    let bundle = json!({
        "apiVersion": "appaloft.io/migration/v1", "kind": "MigrationBundle",
        "metadata": {"name": "gitops"},
        "spec": {
            "project": {"name": "GitOps"},
            "environment": {"name": "production", "kind": "production"},
            "target": {"deploymentTargetId": server},
            "resources": [{"ref": slug, "name": "Web",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
                "network": {"internalPort": 8080}}],
            "variables": [{"key": "SESSION_SECRET", "secretRef": "k8s://shop-secrets#session",
                "exposure": "runtime", "kind": "secret", "resourceRef": slug}],
        }
    });
    let planned = plan(&owner, &bundle).await;
    let digest = planned["planDigest"].as_str().unwrap().to_string();
    let migration: Migration = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Migration",
        "metadata": {"name": "gitops-shop"},
        "spec": {"plan": planned, "digest": digest, "confirmedDigest": digest},
    }))
    .unwrap();
    let api = Api::<Migration>::namespaced(client.clone(), &org.namespace);
    api.create(&Default::default(), &migration).await.unwrap();
    let phase = |wanted: &'static str| {
        let api = api.clone();
        async move {
            eventually(WAIT, &format!("the Migration {wanted}"), || async {
                let status = api.get("gitops-shop").await.ok()?.status?;
                (status.phase.as_deref() == Some(wanted)).then_some(status)
            })
            .await
        }
    };
    let applied = phase("applied").await;
    assert_eq!(
        applied.receipts.len(),
        planned["steps"].as_array().unwrap().len()
    );
    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    let listed = resources.list(&Default::default()).await.unwrap().items;
    assert_eq!(listed.len(), 1);
    let actor = listed[0]
        .annotations()
        .get("berth.dev/updated-by-actor-id")
        .cloned();
    assert_eq!(
        actor.as_deref(),
        Some("gitops-shop"),
        "written as the migration"
    );

    // Cleanup is asked in the spec too.
    let patch = json!({"spec": {"cleanupConfirmedDigest": digest}});
    api.patch(
        "gitops-shop",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
    phase("cleaned-up").await;
    eventually(WAIT, "the resource gone", || async {
        resources
            .list(&Default::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
    let object = kubectl(
        &[
            "get",
            "bmig",
            "gitops-shop",
            "-n",
            &org.namespace,
            "-o",
            "json",
        ],
        None,
    );
    assert_never_shown(secret_value, &[&String::from_utf8_lossy(&object.stdout)]);
    remove_server(&owner, &server).await;
}
