//! Scheduled tasks over HTTP and the CLI (Appaloft's `/scheduled-tasks` and
//! `/scheduled-task-runs` routes) against the running shim: bad input refused by field with
//! nothing created; a task created, listed, shown, configured and deleted (its runs going with
//! it); "run now" answering 202 with a manual run object the controller picks up; the task
//! hidden from another organization and from a deploy token scoped to another resource; `berth
//! tasks` creating and listing one and refusing a bad schedule before sending. Whether a run
//! completes is `scheduled_tasks.rs`'s.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::scheduled_task::{ScheduledTask, ScheduledTaskRun, TASK_LABEL, TriggerKind};
use berth_tests::rest::{Rest, TestOrg, TestUser};
use berth_tests::{client, eventually};
use kube::Api;
use serde_json::{Value, json};

use crate::cli::Berth;
use crate::shim_projects_envs::{environment, invalid, project};
use crate::shim_tokens::create_token;

/// How long the garbage collector may take to remove a deleted task's runs.
const GC_WAIT: Duration = Duration::from_secs(90);

struct Setup {
    org: TestOrg,
    user: TestUser,
    admin: Rest,
    member: Rest,
    project: String,
    web: String,
    worker: String,
}

/// A resource of `project`/`environment` (never deployed); returns its id.
async fn resource(rest: &Rest, project: &str, environment: &str, name: &str) -> String {
    let body = json!({
        "projectId": project, "environmentId": environment, "name": name,
        "kind": "application",
        "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
        "networkProfile": {"internalPort": 8080},
    });
    rest.post("/resources", body).await.ok()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn setup() -> Setup {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let user = org.user(OrganizationRole::Member).await;
    let member = user.rest.clone();
    let project = project(&member, "Shop").await;
    let prod = environment(&member, &project, "prod").await;
    let web = resource(&member, &project, &prod, "web").await;
    let worker = resource(&member, &project, &prod, "worker").await;
    Setup {
        org,
        user,
        admin,
        member,
        project,
        web,
        worker,
    }
}

impl Setup {
    /// A create body for `web` with `patch` applied (`null` removes a field).
    fn body(&self, patch: Value) -> Value {
        let mut body = json!({
            "resourceId": self.web, "schedule": "*/5 * * * *", "timezone": "Europe/Berlin",
            "commandIntent": "echo hello", "timeoutSeconds": 600, "retryLimit": 2,
        });
        let fields = body.as_object_mut().unwrap();
        for (key, value) in patch.as_object().unwrap() {
            match value {
                Value::Null => fields.remove(key),
                value => fields.insert(key.clone(), value.clone()),
            };
        }
        body
    }

    async fn tasks(&self) -> Api<ScheduledTask> {
        Api::namespaced(client().await, &self.org.namespace)
    }

    async fn runs(&self) -> Api<ScheduledTaskRun> {
        Api::namespaced(client().await, &self.org.namespace)
    }

    /// The ids `GET /scheduled-tasks{query}` lists for `rest`.
    async fn listed(&self, rest: &Rest, query: &str) -> Vec<String> {
        let listed = rest.get(&format!("/scheduled-tasks{query}")).await.ok();
        assert_eq!(
            listed["schemaVersion"], "scheduled-tasks.list/v1",
            "{listed}"
        );
        assert!(listed["generatedAt"].is_string(), "{listed}");
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["taskId"].as_str().unwrap().to_string())
            .collect()
    }
}

#[tokio::test]
async fn shim_scheduled_tasks_refuse_bad_input_by_field_and_create_nothing() {
    let s = setup().await;
    let create = |body: Value| {
        let rest = s.member.clone();
        async move { rest.post("/scheduled-tasks", body).await }
    };
    for (patch, field) in [
        (json!({"schedule": "every day"}), "schedule"),
        (json!({"schedule": "61 * * * *"}), "schedule"),
        (json!({"schedule": "* * * *"}), "schedule"),
        (json!({"schedule": null}), "schedule"),
        (json!({"timezone": "Mars/Olympus"}), "timezone"),
        (json!({"timeoutSeconds": 0}), "timeoutSeconds"),
        (json!({"timeoutSeconds": 86_401}), "timeoutSeconds"),
        (json!({"retryLimit": 11}), "retryLimit"),
        (json!({"concurrencyPolicy": "queue"}), "concurrencyPolicy"),
        (json!({"status": "paused"}), "status"),
        (json!({"commandIntent": " "}), "commandIntent"),
        (json!({"commandIntent": null}), "commandIntent"),
    ] {
        let reply = create(s.body(patch.clone())).await;
        assert_eq!(reply.status, 422, "{patch}: {}", reply.body);
        invalid(reply, field);
    }
    let error = create(s.body(json!({"resourceId": "res-missing"})))
        .await
        .error(404, "not_found");
    assert_eq!(error["details"]["field"], "resourceId", "{error}");
    let error = s
        .member
        .get("/scheduled-tasks?status=paused")
        .await
        .error(422, "validation_error");
    assert_eq!(error["details"]["field"], "status");
    let error = s
        .member
        .get("/scheduled-task-runs?triggerKind=cron")
        .await
        .error(422, "validation_error");
    assert_eq!(error["details"]["field"], "triggerKind");
    assert!(s.listed(&s.member, "").await.is_empty(), "nothing listed");
    let stored = s.tasks().await.list(&Default::default()).await.unwrap();
    assert!(stored.items.is_empty(), "no ScheduledTask object was made");
    for path in [
        "/scheduled-tasks/tsk-missing",
        "/scheduled-task-runs/tsk-missing-m-x",
        "/scheduled-task-runs/tsk-missing-m-x/logs",
    ] {
        s.member.get(path).await.error(404, "not_found");
    }
    s.member
        .post("/scheduled-tasks/tsk-missing/runs", json!({}))
        .await
        .error(404, "not_found");
    Rest::anonymous()
        .get("/scheduled-tasks")
        .await
        .error(401, "unauthenticated");
}

/// Creates the task every later step uses: Berlin time, replace, run missed slots.
async fn create_task(s: &Setup) -> String {
    let body = s.body(json!({"concurrencyPolicy": "replace", "runMissed": true}));
    let created = s.member.post("/scheduled-tasks", body).await.expect(201);
    assert_eq!(created["schemaVersion"], "scheduled-tasks.command/v1");
    let task = &created["task"];
    let id = task["taskId"].as_str().expect("a taskId").to_string();
    assert!(id.starts_with("tsk-"), "{created}");
    for (field, value) in [
        ("resourceId", json!(s.web)),
        ("schedule", json!("*/5 * * * *")),
        ("timezone", json!("Europe/Berlin")),
        ("commandIntent", json!("echo hello")),
        ("timeoutSeconds", json!(600)),
        ("retryLimit", json!(2)),
        ("concurrencyPolicy", json!("replace")),
        ("status", json!("enabled")),
        ("runMissed", json!(true)),
    ] {
        assert_eq!(task[field], value, "{field}: {created}");
    }
    assert!(task["createdAt"].is_string() && task.get("latestRun").is_none());
    // The object kubectl and the controller see, owned by its resource.
    let object = s.tasks().await.get(&id).await.expect("the ScheduledTask");
    assert_eq!(object.spec.command, "echo hello");
    assert_eq!(object.spec.timezone, "Europe/Berlin");
    let owner = &object.metadata.owner_references.expect("an owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Resource", s.web.as_str())
    );
    // Defaults: UTC, an hour, no retries, forbid, enabled.
    let minimal = json!({"resourceId": s.worker, "schedule": "@daily", "commandIntent": "true"});
    let other = s.member.post("/scheduled-tasks", minimal).await.expect(201);
    let other = &other["task"];
    assert_eq!(
        (
            &other["timezone"],
            &other["timeoutSeconds"],
            &other["retryLimit"]
        ),
        (&json!("UTC"), &json!(3600), &json!(0))
    );
    assert_eq!(
        (
            &other["concurrencyPolicy"],
            &other["status"],
            &other["runMissed"]
        ),
        (&json!("forbid"), &json!("enabled"), &json!(false))
    );
    id
}

/// Lists, filters and shows; configures some fields and refuses a bad zone leaving it as it was.
async fn list_show_configure(s: &Setup, id: &str) {
    assert_eq!(s.listed(&s.member, "").await.len(), 2);
    let web = format!("?resourceId={}", s.web);
    assert_eq!(s.listed(&s.member, &web).await, [id]);
    assert_eq!(s.listed(&s.member, "?status=disabled").await.len(), 0);
    let project = format!("?projectId={}", s.project);
    assert_eq!(s.listed(&s.member, &project).await.len(), 2);
    let first = s.member.get("/scheduled-tasks?limit=1").await.ok();
    assert_eq!(first["items"].as_array().unwrap().len(), 1);
    let cursor = first["nextCursor"].as_str().expect("a second page");
    let second = s
        .member
        .get(&format!("/scheduled-tasks?limit=1&cursor={cursor}"))
        .await
        .ok();
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert!(second.get("nextCursor").is_none(), "{second}");

    let path = format!("/scheduled-tasks/{id}");
    let shown = s.member.get(&path).await.ok();
    assert_eq!(shown["schemaVersion"], "scheduled-tasks.show/v1");
    assert_eq!(shown["task"]["taskId"], id);

    let changed = s
        .member
        .post(&path, json!({"status": "disabled", "schedule": "@hourly"}))
        .await
        .ok();
    assert_eq!(changed["schemaVersion"], "scheduled-tasks.command/v1");
    assert_eq!(changed["task"]["status"], "disabled");
    assert_eq!(changed["task"]["schedule"], "@hourly");
    assert_eq!(changed["task"]["commandIntent"], "echo hello", "unchanged");
    invalid(
        s.member
            .post(&path, json!({"timezone": "Nowhere/Else"}))
            .await,
        "timezone",
    );
    invalid(
        s.member.post(&path, json!({"retryLimit": 99})).await,
        "retryLimit",
    );
    invalid(
        s.member.post(&path, json!({"resourceId": s.worker})).await,
        "resourceId",
    );
    let object = s.tasks().await.get(id).await.unwrap();
    assert_eq!(
        object.spec.timezone, "Europe/Berlin",
        "a refused change changed nothing"
    );
    assert_eq!(object.spec.retry_limit, 2);
    assert!(object.metadata.owner_references.is_some(), "still owned");
    assert_eq!(s.listed(&s.member, "?status=disabled").await, [id]);
}

/// Run now: 202, a manual run object of the task, listed and shown; a repeated key makes no
/// second run.
async fn run_now(s: &Setup, id: &str) -> String {
    let path = format!("/scheduled-tasks/{id}/runs");
    let started = s.member.post(&path, json!({})).await.expect(202);
    assert_eq!(started["schemaVersion"], "scheduled-tasks.run-now/v1");
    let run = &started["run"];
    let run_id = run["runId"].as_str().expect("a runId").to_string();
    assert!(run_id.starts_with(&format!("{id}-m-")), "{started}");
    assert_eq!(run["taskId"], id);
    assert_eq!(run["resourceId"], s.web.as_str());
    assert_eq!(run["triggerKind"], "manual");
    assert_eq!(run["status"], "accepted");
    let object = s
        .runs()
        .await
        .get(&run_id)
        .await
        .expect("the ScheduledTaskRun");
    assert_eq!(object.spec.trigger_kind, TriggerKind::Manual);
    assert_eq!(object.spec.command, "echo hello");
    assert_eq!(
        (object.spec.timeout_seconds, object.spec.retry_limit),
        (600, 2)
    );
    assert_eq!(object.metadata.labels.unwrap()[TASK_LABEL], id);
    let owner = &object.metadata.owner_references.expect("an owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("ScheduledTask", id)
    );

    // Creation times have seconds only, and a keyed run's name is the key's, not the time's:
    // a keyed run asked for within the same second as another lists in either order.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let keyed = json!({"idempotencyKey": "deploy-42"});
    let once = s.member.post(&path, keyed.clone()).await.expect(202);
    let again = s.member.post(&path, keyed).await.expect(202);
    assert_eq!(once["run"]["runId"], again["run"]["runId"]);

    let listed = s
        .member
        .get(&format!(
            "/scheduled-task-runs?taskId={id}&triggerKind=manual"
        ))
        .await
        .ok();
    assert_eq!(listed["schemaVersion"], "scheduled-task-runs.list/v1");
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{listed}");
    assert_eq!(ids[1], run_id, "newest first: {listed}");
    let shown = s
        .member
        .get(&format!("/scheduled-task-runs/{run_id}"))
        .await
        .ok();
    assert_eq!(shown["schemaVersion"], "scheduled-task-runs.show/v1");
    assert_eq!(shown["run"]["runId"], run_id.as_str());
    let logs = s
        .member
        .get(&format!("/scheduled-task-runs/{run_id}/logs"))
        .await
        .ok();
    assert_eq!(logs["schemaVersion"], "scheduled-task-runs.logs/v1");
    assert_eq!(
        (&logs["runId"], &logs["taskId"]),
        (&json!(run_id), &json!(id))
    );
    assert!(logs["entries"].is_array(), "{logs}");
    // The task's latest run is shown with it.
    let shown = s.member.get(&format!("/scheduled-tasks/{id}")).await.ok();
    assert!(shown["task"]["latestRun"]["runId"].is_string(), "{shown}");
    run_id
}

/// Another organization's member and a deploy token scoped to another resource see nothing
/// of the task and cannot make one for `web`.
async fn hidden_from_others(s: &Setup, id: &str, run_id: &str) {
    let mut other = TestOrg::new(&client().await).await;
    let stranger = other.user(OrganizationRole::Member).await.rest;
    stranger
        .get(&format!("/scheduled-tasks/{id}"))
        .await
        .error(404, "not_found");
    stranger
        .post(&format!("/scheduled-tasks/{id}/runs"), json!({}))
        .await
        .error(404, "not_found");
    stranger
        .get(&format!("/scheduled-task-runs/{run_id}"))
        .await
        .error(404, "not_found");
    assert!(s.listed(&stranger, "").await.is_empty());

    let scope = json!({"resourceIds": [s.worker]});
    let (_, secret) = create_token(&s.admin, &s.org.id, scope).await;
    let token = Rest::anonymous().with_token(&secret);
    token
        .get(&format!("/scheduled-tasks/{id}"))
        .await
        .error(404, "not_found");
    assert_eq!(s.listed(&token, "").await.len(), 1, "only worker's task");
    let error = token
        .post("/scheduled-tasks", s.body(json!({})))
        .await
        .error(404, "not_found");
    assert_eq!(error["details"]["field"], "resourceId");
    let runs = token.get("/scheduled-task-runs").await.ok();
    let items = runs["items"].as_array().unwrap();
    assert!(items.iter().all(|r| r["taskId"] != id), "{runs}");
}

/// Delete: delete/v1, then 404, and the runs it owned are removed.
async fn delete(s: &Setup, id: &str, run_id: &str) {
    let path = format!("/scheduled-tasks/{id}");
    let deleted = s.member.delete(&path, json!({})).await.ok();
    assert_eq!(deleted["schemaVersion"], "scheduled-tasks.delete/v1");
    assert_eq!(
        (
            &deleted["taskId"],
            &deleted["resourceId"],
            &deleted["status"]
        ),
        (&json!(id), &json!(s.web), &json!("deleted"))
    );
    assert!(deleted["deletedAt"].is_string());
    s.member.get(&path).await.error(404, "not_found");
    let runs = s.runs().await;
    let of_task = kube::api::ListParams::default().labels(&format!("{TASK_LABEL}={id}"));
    eventually(GC_WAIT, "the deleted task's runs removed", || async {
        let left = runs.list(&of_task).await.unwrap().items;
        left.is_empty().then_some(())
    })
    .await;
    assert!(runs.get_opt(run_id).await.unwrap().is_none());
    // The shim lists from its watch cache, a moment behind the API server.
    let path = format!("/scheduled-task-runs?resourceId={}", s.web);
    eventually(
        GC_WAIT,
        "the deleted task's runs no longer listed",
        || async {
            let listed = s.member.get(&path).await.ok();
            (listed["items"] == json!([])).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn shim_scheduled_task_is_created_configured_run_and_deleted_over_rest() {
    let s = setup().await;
    let id = create_task(&s).await;
    list_show_configure(&s, &id).await;
    let run_id = run_now(&s, &id).await;
    hidden_from_others(&s, &id, &run_id).await;
    delete(&s, &id, &run_id).await;
}

#[tokio::test]
async fn shim_scheduled_tasks_cli_creates_lists_runs_and_refuses_a_bad_schedule() {
    let s = setup().await;
    let berth = Berth::new();
    berth.login(&s.user).await;
    let refused = berth
        .run(&[
            "tasks",
            "create",
            "--resource",
            "web",
            "--schedule",
            "61 * * * *",
            "--command",
            "x",
        ])
        .await;
    assert_eq!(refused.code, 2, "a usage error: {refused:?}");
    assert!(refused.stderr.contains("schedule"), "{refused:?}");
    let refused = berth
        .run(&[
            "tasks",
            "create",
            "--resource",
            "web",
            "--schedule",
            "@daily",
            "--timezone",
            "Mars/Olympus",
            "--command",
            "x",
        ])
        .await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("IANA"), "{refused:?}");
    assert!(s.listed(&s.member, "").await.is_empty(), "nothing was sent");

    let created = berth
        .run(&[
            "tasks",
            "create",
            "--resource",
            "web",
            "--schedule",
            "*/5 * * * *",
            "--timezone",
            "Europe/Berlin",
            "--command",
            "echo from cli",
            "--timeout",
            "120",
            "--retries",
            "1",
            "--disabled",
            "-q",
        ])
        .await
        .ok();
    let id = created.trim().to_string();
    assert!(id.starts_with("tsk-"), "{created}");
    let listed = berth.run(&["tasks", "list", "-o", "json"]).await.json();
    let task = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["taskId"] == id.as_str())
        .expect("the CLI's task listed")
        .clone();
    assert_eq!(task["resourceId"], s.web.as_str());
    assert_eq!(task["status"], "disabled");
    assert_eq!(task["timeoutSeconds"], 120);
    let table = berth
        .run(&["tasks", "list", "--resource", "web"])
        .await
        .ok();
    assert!(
        table.contains(&id) && table.contains("Europe/Berlin"),
        "{table}"
    );
    let shown = berth.run(&["tasks", "show", &id]).await.ok();
    assert!(shown.contains("echo from cli"), "{shown}");
    let run = berth.run(&["tasks", "run", &id, "-q"]).await.ok();
    let run = run.trim();
    assert!(run.starts_with(&format!("{id}-m-")), "{run}");
    let runs = berth.run(&["tasks", "runs", &id]).await.ok();
    assert!(runs.contains(run) && runs.contains("manual"), "{runs}");
    berth.run(&["tasks", "logs", run]).await.ok();
    let help = berth.run(&["tasks", "--help"]).await.ok();
    for command in [
        "list",
        "create",
        "show",
        "configure",
        "run",
        "runs",
        "logs",
        "delete",
    ] {
        assert!(help.contains(command), "{help}");
    }
    let deleted = berth.run(&["tasks", "delete", &id]).await.ok();
    assert!(deleted.contains(&id), "{deleted}");
    assert!(s.listed(&s.member, "").await.is_empty());
}
