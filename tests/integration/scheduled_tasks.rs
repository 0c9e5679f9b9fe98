//! Scheduled tasks on the stack's `local` server, written with the Kubernetes API as GitOps
//! would. A task on `* * * * *` runs by itself at its slot, once, in a fresh container of the
//! app's image with the app's variables, secrets and bound PostgreSQL; a failed try is tried
//! again; its output is kept with the secret masked and its container removed. A run past its
//! timeout is stopped and fails saying so; a slot reached while the previous run still runs is
//! skipped under `forbid`. A task deleted while its run runs takes the run's container with it,
//! and so does the resource's removal.

use std::time::Duration;

use berth_crds::deployment::DeploymentState;
use berth_crds::member::OrganizationRole;
use berth_crds::scheduled_task::{
    ScheduledTask, ScheduledTaskRun, ScheduledTaskRunSpec, SkippedReason, TaskRunStatus,
    TriggerKind,
};
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{TestNamespace, client, eventually, random_suffix};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use serde_json::{Value, json};

use crate::dependency_bindings::{apply_project, next_attempt};
use crate::dependency_resources::{create, docker, registry_image, wait_ready};
use crate::deployments::{apply, ready_server};

/// A slot comes within a minute; PostgreSQL and the app start first on two busy cores.
const WAIT: Duration = Duration::from_secs(180);

/// A worker on the PostgreSQL image (for `psql`) bound to `db`, with a variable; its secret
/// `API_KEY` comes from `app-secrets`.
fn app_manifest(ns: &TestNamespace, image: &str) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": "app", "namespace": ns.name },
        "spec": {
            "projectId": "shop", "environmentId": "shop-production", "serverId": "local",
            "name": "app", "kind": "worker",
            "source": { "kind": "docker-image", "locator": image },
            "runtimeProfile": { "startCommand": "exec sleep 100000" },
            "autoDeploy": { "enabled": true },
            "variables": [{ "key": "GREETING", "value": "hello" }],
            "dependencyBindings": [{ "dependencyResourceId": "db", "targetName": "DATABASE_URL" }],
        },
    })
    .to_string()
}

fn task_manifest(ns: &TestNamespace, name: &str, spec: Value) -> String {
    let mut spec_with_resource = json!({ "resourceId": "app", "schedule": "* * * * *" });
    spec_with_resource
        .as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "ScheduledTask",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": spec_with_resource,
    })
    .to_string()
}

async fn create_secret(ns: &TestNamespace, key: &str, value: &str) {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": { "name": "app-secrets" },
        "stringData": { key: value },
    }))
    .unwrap();
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .expect("create app-secrets");
}

/// The runs of `task`, oldest first.
async fn runs_of(ns: &TestNamespace, task: &str) -> Vec<ScheduledTaskRun> {
    let params =
        kube::api::ListParams::default().labels(&format!("berth.dev/scheduled-task={task}"));
    let mut runs = ns
        .api::<ScheduledTaskRun>()
        .list(&params)
        .await
        .unwrap()
        .items;
    runs.sort_by_key(|run| run.metadata.creation_timestamp.clone().map(|t| t.0));
    runs
}

/// The first run of `task` that matches `wanted` once it has ended.
async fn ended_run(
    ns: &TestNamespace,
    task: &str,
    wanted: impl Fn(&ScheduledTaskRun) -> bool,
) -> ScheduledTaskRun {
    eventually(WAIT, &format!("a run of {task} ended"), || async {
        runs_of(ns, task)
            .await
            .into_iter()
            .find(|run| wanted(run) && run.run_status().is_final())
    })
    .await
}

/// What `GET /scheduled-task-runs/{run}/logs` answers, as `stream: message` lines.
async fn log_lines(admin: &Rest, run: &str) -> Vec<String> {
    let logs = admin
        .get(&format!("/scheduled-task-runs/{run}/logs"))
        .await
        .ok();
    logs["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            format!(
                "{}: {}",
                entry["stream"].as_str().unwrap(),
                entry["message"].as_str().unwrap()
            )
        })
        .collect()
}

/// A run of task `slow` made by hand (what `POST /scheduled-tasks/slow/runs` makes), with its
/// own command and timeout.
async fn run_by_hand(ns: &TestNamespace, name: &str, command: &str, timeout_seconds: i64) {
    let mut run = ScheduledTaskRun::new(
        name,
        ScheduledTaskRunSpec {
            task_id: "slow".into(),
            resource_id: "app".into(),
            trigger_kind: TriggerKind::Manual,
            scheduled_for: None,
            command: command.into(),
            timeout_seconds,
            retry_limit: 0,
            not_run: None,
        },
    );
    run.metadata.labels =
        Some([("berth.dev/scheduled-task".to_string(), "slow".to_string())].into());
    ns.api::<ScheduledTaskRun>()
        .create(&PostParams::default(), &run)
        .await
        .expect("create a run by hand");
}

#[tokio::test]
async fn a_task_runs_its_slot_once_in_a_fresh_container_with_the_apps_configuration() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let ns = TestNamespace::adopt(&client, &org.namespace);
    ready_server(&ns).await;
    apply_project(&ns);
    let image = registry_image("berth/postgres:15");
    create(&ns, "db", "postgres", &image).await;
    let api_key = format!("key-{}{}", random_suffix(), random_suffix());
    create_secret(&ns, "API_KEY", &api_key).await;
    wait_ready(&ns.api(), "db").await;
    apply(&app_manifest(&ns, &image));
    let deployed = next_attempt(&ns, None).await;
    let state = deployed.status.as_ref().and_then(|s| s.status);
    assert_eq!(
        state,
        Some(DeploymentState::Succeeded),
        "{:?}",
        deployed.status
    );

    // Every minute: prints its variable and secret, asks the bound database, and fails its
    // first try (the database counts the tries: each runs in a fresh container).
    let report = concat!(
        "echo \"greeting=$GREETING key=$API_KEY\"; echo to-stderr >&2; ",
        "psql \"$DATABASE_URL\" -qtAc 'create table if not exists tries (n int); ",
        "insert into tries values (1)'; ",
        "n=$(psql \"$DATABASE_URL\" -tAc 'select count(*) from tries'); echo \"try $n\"; ",
        "[ \"$n\" -ge 2 ] || exit 3",
    );
    apply(&task_manifest(
        &ns,
        "report",
        json!({ "command": report, "retryLimit": 1, "timeoutSeconds": 60 }),
    ));
    // Every minute too, but each run outlasts the next slot: that slot is skipped.
    apply(&task_manifest(
        &ns,
        "busy",
        json!({ "command": "sleep 150", "timeoutSeconds": 300 }),
    ));
    // Never by itself; run by hand, it outlasts its timeout.
    apply(&task_manifest(
        &ns,
        "slow",
        json!({ "command": "echo started; sleep 60", "timeoutSeconds": 2, "state": "disabled" }),
    ));

    // A run asked for by hand (what `POST /scheduled-tasks/slow/runs` makes).
    run_by_hand(&ns, "slow-by-hand", "echo started; sleep 60", 2).await;
    let timed_out = ended_run(&ns, "slow", |run| {
        run.spec.trigger_kind == TriggerKind::Manual
    })
    .await;
    let status = timed_out.status.clone().unwrap();
    assert_eq!(status.status, Some(TaskRunStatus::Failed), "{status:?}");
    let summary = status.failure_summary.clone().unwrap_or_default();
    assert!(summary.contains("timeout of 2 s"), "{summary}");
    assert!(
        log_lines(&admin, "slow-by-hand")
            .await
            .contains(&"stdout: started".to_string())
    );

    // The slot comes: the run starts on time, fails its first try, succeeds on the second.
    let run = ended_run(&ns, "report", |run| {
        run.spec.trigger_kind == TriggerKind::Scheduled
    })
    .await;
    let status = run.status.clone().unwrap();
    assert_eq!(status.status, Some(TaskRunStatus::Succeeded), "{status:?}");
    assert_eq!((status.attempt, status.exit_code), (Some(2), Some(0)));
    let slot: k8s_openapi::jiff::Timestamp =
        run.spec.scheduled_for.clone().unwrap().parse().unwrap();
    let started: k8s_openapi::jiff::Timestamp = status.started_at.clone().unwrap().parse().unwrap();
    let late = started.duration_since(slot).as_secs();
    assert!((0..=30).contains(&late), "started {late} s after its slot");
    let same_slot = runs_of(&ns, "report")
        .await
        .into_iter()
        .filter(|other| other.spec.scheduled_for == run.spec.scheduled_for)
        .count();
    assert_eq!(same_slot, 1, "one run per slot");

    // Its output: the variable, the secret masked, the database's answer, stderr apart, and
    // Berth's lines about each try.
    let lines = log_lines(&admin, &run.metadata.name.clone().unwrap()).await;
    let text = lines.join("\n");
    assert!(
        lines.contains(&"stdout: greeting=hello key=****".to_string()),
        "{text}"
    );
    assert!(lines.contains(&"stderr: to-stderr".to_string()), "{text}");
    assert!(lines.contains(&"stdout: try 2".to_string()), "{text}");
    assert!(text.contains("system: try 1 exited with code 3"), "{text}");
    assert!(
        !text.contains(&api_key),
        "the secret shows in the run's log"
    );
    // The try containers are gone.
    let label = format!(
        "label=berth.dev/scheduled-task-run={}",
        run.metadata.name.clone().unwrap()
    );
    let (_, left) = docker(&["ps", "-a", "--filter", &label, "--format", "{{.Names}}"]);
    assert!(left.is_empty(), "containers left: {left}");

    // The task says when it runs next and how the newest run went.
    let task = ns.api::<ScheduledTask>().get("report").await.unwrap();
    let task_status = task.status.unwrap();
    assert!(task_status.next_run_at.is_some(), "{task_status:?}");

    // The busy task's second slot came while its first run still ran: skipped.
    let skipped = ended_run(&ns, "busy", |run| {
        run.status.as_ref().and_then(|s| s.status) == Some(TaskRunStatus::Skipped)
    })
    .await;
    let status = skipped.status.unwrap();
    assert_eq!(
        status.skipped_reason,
        Some(SkippedReason::ConcurrencyForbidden)
    );
    let first = runs_of(&ns, "busy").await.into_iter().next().unwrap();
    assert_ne!(first.run_status(), TaskRunStatus::Skipped);

    // The busy task deleted while its first run runs: the run goes, and its container with it.
    let first_run = format!(
        "label=berth.dev/scheduled-task-run={}",
        first.metadata.name.clone().unwrap()
    );
    assert_eq!(
        first.run_status(),
        TaskRunStatus::Running,
        "{:?}",
        first.status
    );
    let deleted = berth_tests::kubectl(
        &[
            "delete",
            "scheduledtask.berth.dev",
            "busy",
            "-n",
            &ns.name,
            "--wait=false",
        ],
        None,
    );
    assert!(deleted.status.success(), "{deleted:?}");
    eventually(
        WAIT,
        "the deleted task's run and its container gone",
        || async {
            let (_, left) = docker(&["ps", "-a", "--filter", &first_run, "-q"]);
            (left.is_empty() && runs_of(&ns, "busy").await.is_empty()).then_some(())
        },
    )
    .await;

    // The resource's removal takes a run still running with it.
    run_by_hand(&ns, "kept-running", "sleep 300", 600).await;
    let kept = "label=berth.dev/scheduled-task-run=kept-running";
    eventually(WAIT, "the run by hand running", || async {
        let (_, running) = docker(&["ps", "--filter", kept, "-q"]);
        (!running.is_empty()).then_some(())
    })
    .await;
    let deleted = berth_tests::kubectl(
        &["delete", "resource.berth.dev", "app", "-n", &ns.name],
        None,
    );
    assert!(deleted.status.success(), "{deleted:?}");
    eventually(
        WAIT,
        "the run containers removed with the resource",
        || async {
            let (_, left) = docker(&["ps", "-a", "--filter", kept, "-q"]);
            left.is_empty().then_some(())
        },
    )
    .await;

    // No secret in any run's status.
    for run in ns
        .api::<ScheduledTaskRun>()
        .list(&Default::default())
        .await
        .unwrap()
    {
        let text = serde_json::to_string(&run).unwrap();
        assert!(
            !text.contains(&api_key),
            "the secret shows in run {:?}",
            run.metadata.name
        );
    }
}
