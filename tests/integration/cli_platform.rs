//! The `berth` binary against the running shim, for the commands beyond the everyday nouns:
//! bootstrap (its refusal: the stack's first administrator exists), users, owner transfer
//! and account deletion, monitoring thresholds, samples and rollup, decision records,
//! storage attachments and server connectivity tests. Each asserts what a person notices: the output, the exit code, and
//! the object as a later read shows it. A body the API's own field checks refuse is refused
//! by the CLI before it is sent, with exit 2 and the field named.

use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::TestOrg;
use berth_tests::{client, random_suffix};
use kube::Api;
use kube::api::DeleteParams;
use serde_json::{Value, json};

use crate::cli::{AUTH, Berth, NOT_FOUND, binary};
use crate::deploy_support::{ready_server, remove_server};
use crate::shim_projects_envs::{environment, project};
use crate::shim_servers::{create_credential, stack_key};

/// Exit codes `berth --help` documents.
const USAGE: i32 = 2;
const CONFLICT: i32 = 5;

/// Writes `body` to a file in the person's home and returns its path.
fn body_file(berth: &Berth, name: &str, body: &Value) -> String {
    let path = berth.home.path().join(name);
    std::fs::write(&path, body.to_string()).expect("body file written");
    path.display().to_string()
}

/// The members of the current organization as `berth members list -o json` shows them:
/// email → role.
async fn roles(berth: &Berth) -> Vec<(String, String)> {
    let list = berth.run(&["members", "list", "-o", "json"]).await.json();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|m| (text(&m["email"]), text(&m["role"])))
        .collect()
}

#[tokio::test]
async fn cli_bootstrap_reports_the_first_admin_and_refuses_a_second() {
    let berth = Berth::new();
    let status = berth
        .run(&["bootstrap", "status", "-o", "json"])
        .await
        .json();
    // hack/test.sh created the first administrator before the tests.
    assert_eq!(status["bootstrapRequired"], false, "{status}");
    if let Ok(email) = std::env::var("BERTH_ADMIN_EMAIL") {
        assert_eq!(status["firstAdminEmail"], email.as_str(), "{status}");
    }
    let email = format!("second-admin-{}@test.berth.local", random_suffix());
    let args = [
        "bootstrap",
        "first-admin",
        "--email",
        &email,
        "--organization",
        "Second",
    ];
    let run = berth.run(&args).await;
    assert_eq!(run.code, CONFLICT, "{run:#?}");
    assert!(run.stderr.contains("already exists"), "{run:#?}");
    assert!(!run.stdout.contains("Password"), "{run:#?}");
    // Nobody can sign in as the refused administrator.
    let login = ["login", "--email", &email, "--password-stdin"];
    let run = berth
        .run_with(&binary(), &login, Some("anything\n"), &[])
        .await;
    assert_eq!(run.code, AUTH, "{run:#?}");
}

#[tokio::test]
async fn cli_creates_users_transfers_ownership_and_deletes_an_account() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let member = org.user(OrganizationRole::Member).await;
    let berth = Berth::new();
    berth.login(&owner).await;

    // A new account: its generated password is shown once, and signs in.
    let email = format!("cli-user-{}@test.berth.local", random_suffix());
    let created = berth.run(&["users", "create", &email]).await.ok();
    assert!(
        created.contains(&format!("Created user {email}")),
        "{created}"
    );
    let password = created
        .lines()
        .find_map(|line| line.strip_prefix("Password (shown only now): "))
        .unwrap_or_else(|| panic!("a generated password in {created}"))
        .to_string();
    let user_id = created
        .split(['(', ')'])
        .nth(1)
        .expect("the new user's id")
        .to_string();
    let newcomer = Berth::new();
    let login = ["login", "--email", &email, "--password-stdin"];
    let run = newcomer
        .run_with(&binary(), &login, Some(&format!("{password}\n")), &[])
        .await;
    assert!(run.ok().contains("Signed in"));
    // The same email again is a conflict; a malformed one names the field.
    let run = berth.run(&["users", "create", &email]).await;
    assert_eq!(run.code, CONFLICT, "{run:#?}");
    assert!(run.stderr.contains("already exists"), "{run:#?}");
    let run = berth.run(&["users", "create", "not-an-email"]).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("email"), "{run:#?}");
    delete_user(&client, &user_id).await;

    // The sole owner cannot delete their account; they hand the organization over first.
    let run = berth.run(&["account", "delete"]).await;
    assert_eq!(run.code, CONFLICT, "{run:#?}");
    assert!(run.stderr.contains("only owner"), "{run:#?}");
    let args = ["members", "transfer-ownership", &member.email];
    let said = berth.run(&args).await.ok();
    assert!(said.contains("is now the owner"), "{said}");
    let after = roles(&berth).await;
    assert!(
        after.contains(&(member.email.clone(), "owner".into())),
        "{after:?}"
    );
    assert!(
        after.contains(&(owner.email.clone(), "admin".into())),
        "{after:?}"
    );
    // An unknown member is "not found", and nothing changes.
    let run = berth
        .run(&["members", "transfer-ownership", "nobody@test.berth.local"])
        .await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");

    let said = berth.run(&["account", "delete"]).await.ok();
    assert!(
        said.contains(&format!("Deleted account {}", owner.user_id)),
        "{said}"
    );
    // The stored session is gone, and the password no longer signs in.
    let run = berth.run(&["projects", "list"]).await;
    assert_eq!(run.code, AUTH, "{run:#?}");
    let login = ["login", "--email", &owner.email, "--password-stdin"];
    let run = berth
        .run_with(
            &binary(),
            &login,
            Some(&format!("{}\n", owner.password)),
            &[],
        )
        .await;
    assert_eq!(run.code, AUTH, "{run:#?}");
    let left = member
        .rest
        .get(&format!("/organizations/{}/members", org.id))
        .await
        .ok();
    let active: Vec<&Value> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["email"] == owner.email.as_str() && m["status"] == "active")
        .collect();
    assert!(active.is_empty(), "the deleted account left: {left}");
}

/// Removes a user the CLI created (TestOrg removes only its own).
#[tokio::test]
async fn cli_tests_a_host_before_registering_it_and_a_registered_server() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let berth = Berth::new();
    berth.login(&admin).await;
    let credential = create_credential(&admin.rest, &stack_key()).await;
    let host = berth_tests::stack_env("BERTH_SSH_HOST");
    let port = berth_tests::stack_env("BERTH_SSH_PORT");
    let draft = |extra: &[&str]| {
        let mut args = vec!["servers", "test", "--host", &host, "--port", &port];
        args.extend(["--username", "root", "--credential", &credential]);
        args.extend(extra.iter().copied());
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| {
        let berth = &berth;
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            berth.run(&args).await
        }
    };

    // Every step passes: a table of the four checks, exit 0.
    let table = run(draft(&[])).await.ok();
    for check in ["tcp", "ssh-handshake", "authentication", "docker"] {
        let line = table.lines().find(|l| l.starts_with(check));
        assert!(line.is_some_and(|l| l.contains("passed")), "{table}");
    }
    // A wrong host key pin or a closed port: the failing step named, exit 1.
    let pin = "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let pinned = run(draft(&["--host-key", pin])).await;
    assert_eq!(pinned.code, 1, "{pinned:#?}");
    let handshake = pinned
        .stdout
        .lines()
        .find(|l| l.starts_with("ssh-handshake"));
    assert!(
        handshake.is_some_and(|l| l.contains("failed")),
        "{pinned:#?}"
    );
    assert!(pinned.stderr.contains("unreachable"), "{pinned:#?}");
    let mut closed = draft(&[]);
    closed[5] = "1".into();
    let closed = run(closed).await;
    assert_eq!(closed.code, 1, "{closed:#?}");
    // Neither a server nor a host: a usage error.
    let nothing = berth.run(&["servers", "test"]).await;
    assert_eq!(nothing.code, USAGE, "{nothing:#?}");

    // A registered server, by id, as JSON for a script.
    let (server, _) = ready_server(&admin.rest).await;
    let report = berth
        .run(&["servers", "test", &server, "-o", "json"])
        .await
        .json();
    assert_eq!(report["status"], "healthy", "{report}");
    assert_eq!(report["serverId"], server.as_str());
    remove_server(&admin.rest, &server).await;
}

async fn delete_user(client: &kube::Client, user_id: &str) {
    let _ = Api::<berth_crds::user::User>::all(client.clone())
        .delete(user_id, &DeleteParams::background())
        .await;
    let secret = berth_apiserver_shim::domain::accounts::password_secret_name(user_id);
    let _ = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
        client.clone(),
        berth_crds::SYSTEM_NAMESPACE,
    )
    .delete(&secret, &DeleteParams::background())
    .await;
}

#[tokio::test]
async fn cli_sets_thresholds_records_decisions_and_attaches_storage() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let project_id = project(&admin.rest, "Monitored").await;
    let environment_id = environment(&admin.rest, &project_id, "dev").await;
    let berth = Berth::new();
    berth.login(&admin).await;

    // Thresholds: saved from a file, then shown as the API holds them.
    let scope = json!({"kind": "project", "projectId": project_id});
    let rule = json!({"signal": "memory", "metric": "containerUsedBytes", "critical": 1e18});
    let file = body_file(
        &berth,
        "thresholds.json",
        &json!({"scope": scope, "rules": [rule]}),
    );
    let said = berth
        .run(&["monitoring", "set-thresholds", &file])
        .await
        .ok();
    assert!(said.contains("Saved the threshold policy"), "{said}");
    let project_query = format!("scope.projectId={project_id}");
    let args = [
        "monitoring",
        "thresholds",
        "--query",
        "scope.kind=project",
        "--query",
        &project_query,
        "-o",
        "json",
    ];
    let shown = berth.run(&args).await.json();
    assert_eq!(
        shown["policy"]["rules"][0]["metric"], "containerUsedBytes",
        "{shown}"
    );
    assert_eq!(shown["policy"]["enabled"], true, "{shown}");
    // A misspelt field or an unknown scope kind is refused before sending: exit 2, named.
    let typo = json!({"scope": scope, "rules": [{"signal": "memory", "metric": "usedBytes", "critcal": 1}]});
    let said = refused_thresholds(&berth, "typo.json", &typo).await;
    assert!(said.contains("critcal"), "{said}");
    let cluster = json!({"scope": {"kind": "cluster"}, "rules": [rule]});
    let said = refused_thresholds(&berth, "cluster.json", &cluster).await;
    assert!(said.contains("scope.kind"), "{said}");
    // So is a rule the server would refuse: here the second names a metric of another signal.
    // Nothing is saved: the policy still holds the rule set first.
    let cpu = json!({"signal": "cpu", "metric": "containerCpuPercent", "critical": 90});
    let foreign = json!({"signal": "cpu", "metric": "containerUsedBytes", "critical": 1});
    let mixed = json!({"scope": scope, "rules": [cpu, foreign]});
    let said = refused_thresholds(&berth, "mixed.json", &mixed).await;
    assert!(said.contains("rules[1].metric"), "{said}");
    assert!(said.contains("signal `cpu`"), "{said}");
    let kept = berth.run(&args).await.json();
    assert_eq!(kept["policy"]["rules"], shown["policy"]["rules"], "{kept}");
    // Deleted by its id: the scope has no policy any more, and a second delete is a 404.
    let policy = kept["policy"]["policyId"].as_str().unwrap().to_string();
    let delete = ["monitoring", "delete-thresholds", policy.as_str()];
    let said = berth.run(&delete).await.ok();
    assert!(
        said.contains(&format!("Deleted the threshold policy {policy}")),
        "{said}"
    );
    let run = berth.run(&args).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");
    let run = berth.run(&delete).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");

    // Samples and their rollup of the project (none yet), and a bad query named.
    let samples = berth
        .run(&[
            "monitoring",
            "samples",
            "--query",
            &project_query,
            "-o",
            "json",
        ])
        .await
        .json();
    assert!(samples["samples"].is_array(), "{samples}");
    let rollup = berth
        .run(&[
            "monitoring",
            "rollup",
            "--query",
            &project_query,
            "--query",
            "bucket=minute",
            "-o",
            "json",
        ])
        .await
        .json();
    assert!(rollup["series"].is_array(), "{rollup}");
    // As tables: one line per sample, per signal and bucket (none yet: only the headers).
    let table = berth
        .run(&["monitoring", "samples", "--query", &project_query])
        .await
        .ok();
    assert!(table.starts_with("OBSERVED  SCOPE  FIGURES"), "{table}");
    let table = berth
        .run(&[
            "monitoring",
            "rollup",
            "--query",
            &project_query,
            "--query",
            "bucket=minute",
        ])
        .await
        .ok();
    assert!(
        table.starts_with("SIGNAL  FROM  SAMPLES  AVERAGES"),
        "{table}"
    );
    let run = berth
        .run(&["monitoring", "samples", "--query", "scope.planet=mars"])
        .await;
    assert_ne!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("scope.planet"), "{run:#?}");

    decisions(&berth).await;
    storage(&berth, &client, &org, &project_id, &environment_id).await;
}

/// What `berth monitoring set-thresholds` says, on standard error, when it refuses `body`
/// before sending it (exit 2).
async fn refused_thresholds(berth: &Berth, name: &str, body: &Value) -> String {
    let file = body_file(berth, name, body);
    let run = berth.run(&["monitoring", "set-thresholds", &file]).await;
    assert_eq!(run.code, USAGE, "{run:#?}");
    run.stderr
}

/// `berth decisions record` from files, and the lists that show the records.
async fn decisions(berth: &Berth) {
    let overlay = json!({"operationKey": "deployments.create", "source": "cli"});
    let file = body_file(berth, "overlay.json", &overlay);
    let decided = berth
        .run(&["decisions", "record", "overlay", &file, "-o", "json"])
        .await
        .json();
    assert_eq!(decided["result"]["allowed"], true, "{decided}");
    let id = decided["result"]["record"]["id"]
        .as_str()
        .expect("a record id");
    let listed = berth
        .run(&["decisions", "overlays", "-o", "json"])
        .await
        .json();
    let ids: Vec<&str> = listed["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert!(ids.contains(&id), "{listed}");

    // A usage intent is idempotent by key: the repeat is a duplicate of the first record.
    let key = format!("cli-{}", random_suffix());
    let intent = json!({"idempotencyKey": key, "capabilityKey": "deployments", "source": "cli"});
    let file = body_file(berth, "intent.json", &intent);
    let args = ["decisions", "record", "usage-intent", &file, "-o", "json"];
    let first = berth.run(&args).await.json();
    let again = berth.run(&args).await.json();
    assert_eq!(first["result"]["duplicate"], false, "{first}");
    assert_eq!(again["result"]["duplicate"], true, "{again}");
    assert_eq!(
        again["result"]["record"]["id"],
        first["result"]["record"]["id"]
    );
    // A bad body never reaches the API: exit 2 naming the field, no record.
    let bad = json!({"idempotencyKey": "", "capabilityKey": "deployments", "source": "cli"});
    let file = body_file(berth, "bad-intent.json", &bad);
    let run = berth
        .run(&["decisions", "record", "usage-intent", &file])
        .await;
    assert_eq!(run.code, USAGE, "{run:#?}");
    assert!(run.stderr.contains("idempotencyKey"), "{run:#?}");
    let listed = berth
        .run(&["decisions", "usage-intents", "-o", "json"])
        .await
        .json();
    assert_eq!(listed["records"].as_array().unwrap().len(), 1, "{listed}");
}

/// A resource created with the typed body, a volume attached and detached.
async fn storage(
    berth: &Berth,
    client: &kube::Client,
    org: &TestOrg,
    project_id: &str,
    environment_id: &str,
) {
    let create = [
        "resources",
        "create",
        "Web",
        "--project",
        project_id,
        "--environment",
        environment_id,
        "--image",
        "berth/sample-app:1",
        "--port",
        "8080",
        "-o",
        "json",
    ];
    let created = berth.run(&create).await.json();
    let id = created["id"].as_str().expect("the resource id").to_string();
    assert_eq!(created["networkProfile"]["internalPort"], 8080, "{created}");
    // A bad kind or port is refused before sending, and nothing more is created.
    let mut bad = create.to_vec();
    bad[2] = "Other";
    bad.extend(["--kind", "spaceship"]);
    let run = berth.run(&bad).await;
    assert_eq!(run.code, USAGE, "{run:#?}");
    assert!(run.stderr.contains("--kind spaceship"), "{run:#?}");
    let listed = berth.run(&["resources", "list", "-o", "json"]).await.json();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");

    // A volume of the resource's environment, named by its name from then on.
    let volume = [
        "volumes",
        "create",
        "App Data",
        "--project",
        project_id,
        "--environment",
        environment_id,
        "-q",
    ];
    let volume_id = berth.run(&volume).await.ok().trim().to_string();
    assert!(volume_id.starts_with("vol-"), "{volume_id}");
    let run = berth.run(&volume).await;
    assert_eq!(run.code, CONFLICT, "{run:#?}");
    let bind = [
        "volumes",
        "create",
        "Host",
        "--project",
        project_id,
        "--environment",
        environment_id,
        "--source-path",
        "srv",
    ];
    let run = berth.run(&bind).await;
    assert_eq!(run.code, USAGE, "{run:#?}");
    assert!(run.stderr.contains("sourcePath"), "{run:#?}");
    let listed = berth.run(&["volumes", "list", "-q"]).await.ok();
    assert_eq!(listed.trim(), volume_id, "a refused volume was created");

    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    let args = [
        "config",
        "attach-storage",
        "--resource",
        "web",
        "App Data",
        "/var/lib/app",
    ];
    let said = berth.run(&args).await.ok();
    let attachment = said
        .split_whitespace()
        .find(|word| word.starts_with("att-"))
        .unwrap_or_else(|| panic!("the attachment id in {said}"))
        .to_string();
    let attached = resources.get(&id).await.unwrap().spec.storage_attachments;
    assert_eq!(attached.len(), 1);
    assert_eq!(
        (
            attached[0].attachment_id.as_str(),
            attached[0].storage_volume_id.as_str(),
            attached[0].destination_path.as_str()
        ),
        (attachment.as_str(), volume_id.as_str(), "/var/lib/app")
    );
    let shown = berth.run(&["volumes", "show", "app-data"]).await.ok();
    assert!(shown.contains(&format!("{id}:/var/lib/app")), "{shown}");
    // Attached, it cannot be deleted: exit 5 naming the resource.
    let run = berth.run(&["volumes", "delete", "App Data"]).await;
    assert_eq!(run.code, CONFLICT, "{run:#?}");
    assert!(run.stderr.contains(&id), "{run:#?}");
    // The same path again is a conflict; a relative one is refused before sending.
    let run = berth.run(&args).await;
    assert_eq!(run.code, CONFLICT, "{run:#?}");
    let relative = [
        "config",
        "attach-storage",
        "--resource",
        "web",
        "App Data",
        "var/lib",
    ];
    let run = berth.run(&relative).await;
    assert_eq!(run.code, USAGE, "{run:#?}");
    assert!(run.stderr.contains("destinationPath"), "{run:#?}");

    let detach = ["config", "detach-storage", "--resource", "web", &attachment];
    let said = berth.run(&detach).await.ok();
    assert!(said.contains(&format!("Detached {attachment}")), "{said}");
    let left = resources.get(&id).await.unwrap().spec.storage_attachments;
    assert!(left.is_empty(), "{left:?}");
    let run = berth.run(&detach).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");
    let said = berth.run(&["volumes", "delete", "App Data"]).await.ok();
    assert!(said.contains("data on servers is kept"), "{said}");
    let run = berth.run(&["volumes", "show", &volume_id]).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");
}
