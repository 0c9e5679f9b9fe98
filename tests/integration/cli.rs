//! The `berth` binary against the running shim, as a person or a script uses it: sign-in
//! (and a wrong password), context switch, projects and environments with `-o json`, `env
//! import`, a deploy that succeeds and one that fails, and a revoked deploy token. Each test
//! has its own config dir, so nothing is shared but the stack.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use berth_crds::member::{Member, MemberSpec, OrganizationRole};
use berth_tests::rest::{Rest, TestOrg, TestUser, base_url};
use berth_tests::{client, eventually, random_suffix};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

use crate::cli_tmux::Pane;
use crate::deploy_support::{WAIT, delete_resource, ready_server, remove_server, wait_listed_with};
use crate::shim_projects_envs::{environment, project};

/// Exit codes `berth --help` documents.
pub(crate) const AUTH: i32 = 3;
pub(crate) const NOT_FOUND: i32 = 4;

/// A person at a terminal: their own HOME and config dir, and the built binary.
pub(crate) struct Berth {
    pub(crate) home: tempfile::TempDir,
}

#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// Asserts success and returns stdout.
    #[track_caller]
    pub(crate) fn ok(self) -> String {
        assert_eq!(self.code, 0, "berth failed: {self:#?}");
        self.stdout
    }

    /// Asserts success and parses stdout as JSON.
    #[track_caller]
    pub(crate) fn json(self) -> Value {
        let stdout = self.ok();
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
    }
}

/// A `berth` command still running, and what it printed so far.
pub(crate) struct Started {
    child: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Started {
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn binary() -> PathBuf {
    let dir = std::env::var("BERTH_BIN_DIR").expect("BERTH_BIN_DIR (hack/test.sh sets it)");
    PathBuf::from(dir).join("berth")
}

impl Berth {
    pub(crate) fn new() -> Self {
        Self {
            home: tempfile::tempdir().expect("a temporary HOME"),
        }
    }

    fn config_file(&self) -> PathBuf {
        self.home.path().join("config/berth/config.json")
    }

    pub(crate) async fn run(&self, args: &[&str]) -> Run {
        self.run_with(&binary(), args, None, &[]).await
    }

    /// Runs `program` with `args`, `stdin` piped in and extra `env`; BERTH_TOKEN only when
    /// given, colour off.
    pub(crate) async fn run_with(
        &self,
        program: &std::path::Path,
        args: &[&str],
        stdin: Option<&str>,
        env: &[(&str, &str)],
    ) -> Run {
        let mut command = self.command(program, args);
        command
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let stdin = stdin.unwrap_or_default().to_string();
        // Off the async threads: a deploy runs for a while, and others run beside it.
        let output = tokio::task::spawn_blocking(move || {
            let mut child = command.spawn().expect("the berth binary runs");
            let mut input = child.stdin.take().expect("stdin");
            input.write_all(stdin.as_bytes()).expect("stdin written");
            drop(input);
            child.wait_with_output().expect("berth's output")
        });
        let output = tokio::time::timeout(Duration::from_secs(300), output)
            .await
            .expect("berth finished within 5 minutes")
            .expect("the runner thread");
        Run {
            code: output.status.code().expect("an exit code"),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// `program args` in this person's HOME, against the stack's API, BERTH_TOKEN unset,
    /// colour off.
    fn command(&self, program: &std::path::Path, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(program);
        command
            .args(args)
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("BERTH_URL", base_url())
            .env("NO_COLOR", "1")
            .env_remove("BERTH_TOKEN");
        command
    }

    /// Starts `berth args` without waiting for it to end (a `--watch`): the lines it prints
    /// are gathered as they come.
    pub(crate) fn start(&self, args: &[&str]) -> Started {
        let mut child = self
            .command(&binary(), args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the berth binary runs");
        let stdout = child.stdout.take().expect("stdout");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let gathered = lines.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                gathered.lock().unwrap().push(line);
            }
        });
        Started { child, lines }
    }

    /// The environment `run_with` gives the binary, for a command started on a tmux pane.
    fn terminal_env(&self) -> Vec<(&'static str, String)> {
        let home = self.home.path();
        vec![
            ("HOME", home.display().to_string()),
            ("XDG_CONFIG_HOME", home.join("config").display().to_string()),
            ("BERTH_URL", base_url()),
            ("BERTH_TOKEN", String::new()),
        ]
    }

    pub(crate) async fn login(&self, user: &TestUser) {
        let args = ["login", "--email", &user.email, "--password-stdin"];
        let password = format!("{}\n", user.password);
        let run = self.run_with(&binary(), &args, Some(&password), &[]).await;
        assert!(run.ok().contains("Signed in"));
    }
}

/// Makes `user` a member of `org` too, and waits until the REST API sees it.
pub(crate) async fn add_member(client: &kube::Client, org: &TestOrg, user: &TestUser) {
    let member = Member::new(
        &format!("mem-{}", random_suffix()),
        MemberSpec {
            user_id: user.user_id.clone(),
            email: user.email.clone(),
            role: OrganizationRole::Member,
            active: true,
        },
    );
    Api::<Member>::namespaced(client.clone(), &org.namespace)
        .create(&PostParams::default(), &member)
        .await
        .expect("create member");
    eventually(WAIT, "second membership visible", || async {
        let context = user.rest.get("/organizations/current-context").await.ok();
        let organizations = context["organizations"].as_array()?.clone();
        organizations
            .iter()
            .any(|o| o["organizationId"] == org.id.as_str())
            .then_some(())
    })
    .await;
}

fn ids(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|item| item["id"].as_str())
        .collect()
}

#[tokio::test]
async fn cli_signs_in_switches_context_and_manages_projects_and_environments() {
    let client = client().await;
    let mut home_org = TestOrg::new(&client).await;
    let other_org = TestOrg::new(&client).await;
    let user = home_org.user(OrganizationRole::Owner).await;
    add_member(&client, &other_org, &user).await;
    let berth = Berth::new();

    // Not signed in yet: exit 3 and a hint.
    let run = berth.run(&["projects", "list"]).await;
    assert_eq!(run.code, AUTH, "{run:#?}");
    assert!(run.stderr.contains("berth login"), "{run:#?}");

    // A wrong password is refused with exit 3, the API's code and a clear message.
    let args = ["login", "--email", &user.email, "--password-stdin"];
    let run = berth
        .run_with(&binary(), &args, Some("not-the-password\n"), &[])
        .await;
    assert_eq!(run.code, AUTH, "{run:#?}");
    assert!(run.stderr.contains("wrong email or password"), "{run:#?}");
    assert!(!berth.config_file().exists(), "nothing stored on failure");

    berth.login(&user).await;
    let stored = std::fs::read_to_string(berth.config_file()).unwrap();
    assert!(
        !stored.contains(&user.password),
        "the password is never stored"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(berth.config_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Context: both organizations listed, the switch sticks (it is the session's).
    let context = berth.run(&["context", "-o", "json"]).await.json();
    assert_eq!(context["organizations"].as_array().unwrap().len(), 2);
    let table = berth.run(&["context"]).await.ok();
    assert!(table.lines().next().unwrap().contains("SLUG"), "{table}");
    berth.run(&["context", &other_org.id]).await.ok();
    let context = berth.run(&["context", "-o", "json"]).await.json();
    assert_eq!(
        context["currentOrganization"]["organizationId"],
        other_org.id.as_str()
    );
    let run = berth.run(&["context", "no-such-org"]).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");
    berth.run(&["context", &home_org.id]).await.ok();

    // Projects and environments, created by name, listed as the API's JSON, archived.
    let project_id = berth.run(&["projects", "create", "Shop", "-q"]).await.ok();
    let project_id = project_id.trim();
    assert!(project_id.starts_with("prj-"), "{project_id}");
    let listed = berth.run(&["projects", "list", "-o", "json"]).await.json();
    assert_eq!(ids(&listed), vec![project_id]);
    assert_eq!(listed["items"][0]["organizationId"], home_org.id.as_str());
    assert_eq!(berth.run(&["projects", "count"]).await.ok().trim(), "1");
    let decided = berth
        .run(&[
            "decisions",
            "capabilities",
            "deployments.create",
            "-o",
            "json",
        ])
        .await
        .json();
    assert_eq!(decided["capabilities"][0]["allowed"], true, "{decided}");
    let create_env = [
        "environments",
        "create",
        "--project",
        "Shop",
        "prod",
        "--kind",
        "production",
        "-q",
    ];
    let environment_id = berth.run(&create_env).await.ok().trim().to_string();
    assert!(environment_id.starts_with("env-"), "{environment_id}");
    let listed = berth
        .run(&["envs", "list", "--project", project_id, "-o", "json"])
        .await
        .json();
    assert_eq!(ids(&listed), vec![environment_id.as_str()]);
    assert_eq!(listed["items"][0]["kind"], "production");
    let table = berth.run(&["envs", "list"]).await.ok();
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("ID") && header.contains("KIND"),
        "{table}"
    );
    assert!(table.contains(&environment_id) && table.contains("production"));
    let yaml = berth
        .run(&["projects", "show", project_id, "-o", "yaml"])
        .await
        .ok();
    assert!(yaml.contains(&format!("id: {project_id}")), "{yaml}");

    let renamed = berth
        .run(&["projects", "rename", project_id, "Web Shop", "-o", "json"])
        .await
        .json();
    assert_eq!(renamed["name"], "Web Shop");

    berth.run(&["envs", "delete", &environment_id]).await.ok();
    let shown = berth
        .run(&["envs", "show", &environment_id, "-o", "json"])
        .await
        .json();
    assert_eq!(shown["lifecycleStatus"], "archived");
    berth.run(&["projects", "delete", project_id]).await.ok();
    let listed = berth.run(&["projects", "list", "-o", "json"]).await.json();
    assert!(ids(&listed).is_empty(), "{listed}");
    let run = berth.run(&["projects", "show", "prj-missing"]).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");
    assert!(run.stderr.contains("not_found"), "{run:#?}");

    // Members and invitations of the current organization.
    let members = berth.run(&["members", "list", "-o", "json"]).await.json();
    assert_eq!(members["items"][0]["email"], user.email.as_str());
    let invitee = format!("invitee-{}@test.berth.local", random_suffix());
    let create_invitation = ["invitations", "create", &invitee, "--role", "member", "-q"];
    let invitation = berth.run(&create_invitation).await.ok().trim().to_string();
    assert!(invitation.starts_with("inv-"), "{invitation}");
    let pending = berth.run(&["invitations", "list"]).await.ok();
    assert!(
        pending.contains(&invitee) && pending.contains("pending"),
        "{pending}"
    );
    let revoked = berth
        .run(&["invitations", "revoke", &invitation, "-o", "json"])
        .await
        .json();
    assert_eq!(revoked["status"], "revoked");

    // argv[0] does not matter: the same binary as the kubectl plugin.
    let plugin = berth.home.path().join("kubectl-berth");
    std::os::unix::fs::symlink(binary(), &plugin).unwrap();
    let run = berth.run_with(&plugin, &["context", "-q"], None, &[]).await;
    let mut listed: Vec<String> = run.ok().lines().map(str::to_string).collect();
    listed.sort();
    let mut expected = vec![home_org.id.clone(), other_org.id.clone()];
    expected.sort();
    assert_eq!(listed, expected);

    // The account: its profile, and this CLI's session among the user's.
    let profile = berth.run(&["account", "show", "-o", "json"]).await.json();
    assert_eq!(profile["email"], user.email.as_str());
    let sessions = berth
        .run(&["account", "sessions", "-o", "json"])
        .await
        .json();
    let current = sessions["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] == true)
        .cloned()
        .expect("the CLI's session is the current one");
    assert_eq!(current["clientKind"], "cli", "{sessions}");

    // Signed out: the session is revoked, and the next command says so.
    berth.run(&["logout"]).await.ok();
    let run = berth.run(&["projects", "list"]).await;
    assert_eq!(run.code, AUTH, "{run:#?}");
}

#[tokio::test]
async fn cli_refuses_an_invalid_or_revoked_deploy_token_with_exit_3() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let berth = Berth::new();
    berth.login(&owner).await;

    let secret = berth
        .run(&["tokens", "create", "--name", "ci", "-q"])
        .await
        .ok()
        .trim()
        .to_string();
    assert!(!secret.is_empty());
    let tokens = berth.run(&["tokens", "list", "-o", "json"]).await.json();
    let token = tokens["items"][0].clone();
    assert_eq!(token["displayName"], "ci");
    let listed = berth.run(&["tokens", "list"]).await.ok();
    assert!(
        !listed.contains(&secret),
        "a listed token never shows its secret"
    );

    let ci = Berth::new();
    let env = [("BERTH_TOKEN", secret.as_str())];
    let run = ci
        .run_with(&binary(), &["projects", "list", "-o", "json"], None, &env)
        .await;
    run.json();

    let token_id = token["tokenId"].as_str().unwrap();
    berth.run(&["tokens", "revoke", token_id]).await.ok();
    let run = ci
        .run_with(&binary(), &["projects", "list"], None, &env)
        .await;
    assert_eq!(run.code, AUTH, "{run:#?}");
    assert!(run.stderr.contains("unauthenticated"), "{run:#?}");

    let run = ci.run(&["login", "--token", "not-a-token"]).await;
    assert_eq!(run.code, AUTH, "{run:#?}");
    assert!(!ci.config_file().exists(), "an invalid token is not stored");
}

/// A resource of the sample app on `server`, serving `/healthz` (or a `health` path that
/// fails, for a deploy that fails).
/// `berth deployments list --resource R --watch -o json`, started once it printed the list.
struct AttemptsWatch {
    started: Started,
    listed: Vec<Value>,
}

async fn watch_attempts(berth: &Berth, rest: &Rest, slug: &str, id: &str) -> AttemptsWatch {
    let listed = rest
        .get(&format!("/deployments?resourceId={id}"))
        .await
        .ok();
    let listed = listed["items"].as_array().cloned().unwrap_or_default();
    let args = [
        "deployments",
        "list",
        "--resource",
        slug,
        "--watch",
        "-o",
        "json",
    ];
    let started = berth.start(&args);
    eventually(WAIT, "the watched list printed", || async {
        started.lines().iter().any(|line| line == "}").then_some(())
    })
    .await;
    AttemptsWatch { started, listed }
}

impl AttemptsWatch {
    /// Waits until the watch printed, one JSON line each, an attempt it had not listed, first
    /// unfinished and then succeeded.
    async fn printed_a_new_attempt_succeeded(&self) {
        let known: Vec<&Value> = self.listed.iter().map(|row| &row["id"]).collect();
        let rows = || -> Vec<Value> {
            let lines = self.started.lines();
            let rows = lines
                .iter()
                .filter_map(|line| serde_json::from_str(line).ok());
            rows.filter(|row: &Value| row.is_object() && !known.contains(&&row["id"]))
                .collect()
        };
        let done = eventually(WAIT, "a new attempt printed as succeeded", || async {
            rows().into_iter().find(|row| row["status"] == "succeeded")
        })
        .await;
        let same = |row: &Value| row["id"] == done["id"];
        let states: Vec<Value> = rows()
            .iter()
            .filter(|r| same(r))
            .map(|r| r["status"].clone())
            .collect();
        assert!(
            states.len() >= 2,
            "printed as it changed, not only at its end: {states:?}"
        );
    }
}

async fn sample_resource(
    user: &TestUser,
    ids: (&str, &str, &str),
    slug: &str,
    image: &str,
    health: &str,
) -> String {
    let (project, environment, server) = ids;
    let body = json!({
        "projectId": project, "environmentId": environment, "name": slug, "slug": slug,
        "kind": "application", "serverId": server,
        "source": {"kind": "docker-image", "locator": image},
        "networkProfile": {"internalPort": 8080},
        "runtimeProfile": {"healthCheck": {"path": health, "intervalSeconds": 1, "retries": 1}},
    });
    let created = user.rest.post("/resources", body).await.ok();
    created["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn cli_imports_an_env_file_and_deploys_with_progress_or_the_error_code() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let (server, proxy_port) = ready_server(&admin.rest).await;
    let shop = project(&admin.rest, "Shop").await;
    let prod = environment(&admin.rest, &shop, "prod").await;
    let ids = (shop.as_str(), prod.as_str(), server.as_str());
    let good = format!("cligood{}", random_suffix());
    let broken = format!("clibroken{}", random_suffix());
    let good_id = sample_resource(&admin, ids, &good, "berth/sample-app:2", "/healthz").await;
    let broken_id = sample_resource(&admin, ids, &broken, "berth/sample-app:1", "/nope").await;
    let berth = Berth::new();
    berth.login(&admin).await;

    // env import: a .env file, all entries at once, shown in the effective configuration.
    let file = berth.home.path().join("app.env");
    std::fs::write(&file, "# app\nGREETING=hello\nEMPTY=\n").unwrap();
    let file = file.to_str().unwrap();
    let imported = berth
        .run(&["env", "import", file, "--resource", &good, "-o", "json"])
        .await
        .json();
    let keys: Vec<&str> = imported["importedEntries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, vec!["GREETING", "EMPTY"]);
    let listed = berth.run(&["env", "list", "-r", &good]).await.ok();
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("GREETING") && l.contains("hello")),
        "{listed}"
    );

    // A secret goes in through standard input and never comes out again.
    let value = format!("s3cret-{}", random_suffix());
    let set = ["secrets", "set", "--resource", &good, "API_KEY"];
    berth
        .run_with(&binary(), &set, Some(&value), &[])
        .await
        .ok();
    let shown = berth
        .run(&["secrets", "show", "--resource", &good, "API_KEY"])
        .await
        .ok();
    assert!(
        shown.contains("API_KEY") && !shown.contains(&value),
        "{shown}"
    );
    let listed = berth
        .run(&["secrets", "list", "--resource", &good, "-o", "json"])
        .await
        .ok();
    assert!(
        listed.contains("API_KEY") && !listed.contains(&value),
        "{listed}"
    );

    terminal_on_a_pane(&berth, &server).await;

    // The controller's own first attempts end first; then both deploy through the stream.
    tokio::join!(
        wait_listed_with(&admin.rest, &good_id, "succeeded"),
        wait_listed_with(&admin.rest, &broken_id, "failed"),
    );
    let watch = watch_attempts(&berth, &admin.rest, &good, &good_id).await;
    let (deploy_good, deploy_broken) = (["deploy", &good], ["deploy", &broken]);
    let (succeeded, failed) = tokio::join!(berth.run(&deploy_good), berth.run(&deploy_broken));
    watch.printed_a_new_attempt_succeeded().await;
    let shown = succeeded.ok();
    let step = shown.find("step 1/5").unwrap_or_else(|| panic!("{shown}"));
    let url = shown
        .find(&format!("URL: http://{good}.localhost"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(step < url, "progress, then the URL: {shown}");
    assert!(shown.contains("step 5/5"), "{shown}");
    assert_eq!(failed.code, 1, "{failed:#?}");
    assert!(failed.stdout.contains("step 1/5"), "{failed:#?}");
    assert!(
        failed.stderr.contains("(health_check_unexpected_status)")
            && failed.stderr.contains("answered 404"),
        "{failed:#?}"
    );
    let once = !failed.stdout.contains("health_check_unexpected_status");
    assert!(once, "the error is shown once, on stderr: {failed:#?}");

    deploy_on_a_pane(&berth, &good).await;

    // The attempt's timeline and the resource's health read back through the CLI too.
    let listed = berth.run(&["resources", "list", "-o", "json"]).await.json();
    let item = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == good_id.as_str())
        .cloned()
        .expect("the resource is listed");
    let deployment = item["lastDeploymentId"].as_str().unwrap();
    let timeline = berth.run(&["timeline", &good, deployment]).await.ok();
    assert!(
        timeline.contains("step 5/5") && timeline.contains("succeeded"),
        "{timeline}"
    );
    // Followed, a finished attempt's timeline is printed whole and the command ends.
    let followed = berth
        .run(&["timeline", &good, deployment, "--follow"])
        .await
        .ok();
    assert!(followed.contains("step 5/5"), "{followed}");

    // A resource's configuration, and the server's key rotated in place (the same key, so
    // the server stays reachable).
    let auto_deploy = berth
        .run(&["config", "auto-deploy", "--resource", &good, "-o", "json"])
        .await
        .json();
    assert_eq!(auto_deploy["resourceId"], good_id.as_str(), "{auto_deploy}");
    let changed = berth
        .run(&["config", "network", "--resource", &good, "--port", "8080"])
        .await
        .ok();
    assert!(changed.contains("Changed the network profile"), "{changed}");
    let credential = berth.run(&["credentials", "list", "-q"]).await.ok();
    let key = berth_tests::stack_env("BERTH_SSH_KEY");
    let rotate = [
        "credentials",
        "rotate",
        credential.trim(),
        "--private-key-file",
        &key,
    ];
    let rotated = berth.run(&rotate).await.ok();
    assert!(rotated.contains("1 server(s) use the new key"), "{rotated}");
    let health = berth.run(&["health", &good, "-o", "json"]).await.json();
    assert_eq!(health["resourceId"], good_id.as_str());
    let diagnosis = berth.run(&["diagnose", &broken]).await.ok();
    assert!(
        diagnosis.contains("health_check_unexpected_status"),
        "{diagnosis}"
    );

    let logs = berth
        .run(&["logs", &good, "--tail", "5", "-o", "json"])
        .await
        .json();
    assert_eq!(logs["resourceId"], good_id.as_str());
    assert!(logs["logs"].is_array(), "{logs}");

    // `berth why`: the edge proxy's evidence for a request it could not serve.
    let unknown_host = format!("nobody{}.localhost", random_suffix());
    let answer = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{proxy_port}/"))
        .header("Host", &unknown_host)
        .send()
        .await
        .expect("the edge proxy answers");
    let request_id = answer.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let path = format!("/resource-access-failures/{request_id}");
    eventually(WAIT, "the evidence is captured", || async {
        (admin.rest.get(&path).await.status == 200).then_some(())
    })
    .await;
    let why = berth.run(&["why", &request_id]).await.ok();
    assert!(why.contains("resource_access_route_not_found"), "{why}");
    assert!(why.contains(&unknown_host) && why.contains("404"), "{why}");
    let run = berth.run(&["why", "no-such-request"]).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");

    let history = berth
        .run(&["health", &good, "--history", "-o", "json"])
        .await
        .json();
    assert!(history["observations"].is_array(), "{history}");
    let restart = berth
        .run(&["resources", "restart", &good, "-o", "json"])
        .await
        .json();
    assert_eq!(restart["operation"], "restart");
    assert_eq!(restart["status"], "accepted");

    delete_resource(&admin.rest, &good_id, &good).await;
    delete_resource(&admin.rest, &broken_id, &broken).await;
    remove_server(&admin.rest, &server).await;
}

/// `berth terminal` on a tmux pane: the remote shell sees the window's size and its change,
/// the shell's exit status makes the CLI fail, and the local terminal's settings are as they
/// were once it exits.
async fn terminal_on_a_pane(berth: &Berth, server: &str) {
    let home = berth.home.path();
    let (before, after) = (home.join("stty-before"), home.join("stty-after"));
    let command = format!(
        "stty -g > {}; {} terminal {server}; echo exit=$?; stty -g > {}; sleep 600",
        before.display(),
        binary().display(),
        after.display()
    );
    let pane = Pane::start(&command, (100, 30), &berth.terminal_env());
    // Only the remote shell turns `$((2*3))` into 6: the typed line itself shows the formula.
    pane.type_line("stty size; echo size-$((2*3))");
    let shown = pane.wait_for("size-6", WAIT).await;
    assert!(shown.lines().any(|l| l.trim() == "30 100"), "{shown}");

    pane.resize((120, 40));
    // The CLI looks at the window size between reads (every 30 ms).
    tokio::time::sleep(Duration::from_secs(1)).await;
    pane.type_line("stty size; echo size-$((3*3))");
    let shown = pane.wait_for("size-9", WAIT).await;
    assert!(shown.lines().any(|l| l.trim() == "40 120"), "{shown}");

    pane.type_line("exit 3");
    let shown = pane.wait_for("exit=", WAIT).await;
    assert!(shown.contains("exit=1"), "{shown}");
    assert!(shown.contains("the shell exited with status 3"), "{shown}");
    eventually(WAIT, "the settings after the CLI are saved", || async {
        std::fs::metadata(&after).ok().filter(|m| m.len() > 0)
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(&before).unwrap(),
        std::fs::read_to_string(&after).unwrap(),
        "raw mode is left: the terminal is restored"
    );
}

/// `berth deploy` on a tmux pane: a spinner with the running step and its elapsed time while
/// it runs, the step lines, the URL at the end, and no spinner left behind.
async fn deploy_on_a_pane(berth: &Berth, slug: &str) {
    let command = format!(
        "{} deploy {slug}; echo exit=$?; sleep 600",
        binary().display()
    );
    let pane = Pane::start(&command, (160, 50), &berth.terminal_env());
    let spinner_line = |text: &str| {
        text.lines().any(|line| {
            let line = line.trim_end();
            ["| ", "/ ", "- ", "\\ "]
                .iter()
                .any(|f| line.starts_with(f))
                && line.ends_with("s)")
        })
    };
    let started = std::time::Instant::now();
    let mut saw_spinner = false;
    let shown = loop {
        let text = pane.text();
        saw_spinner |= spinner_line(&text);
        if text.contains("exit=") {
            break text;
        }
        assert!(started.elapsed() < WAIT, "the deploy never ended:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(shown.contains("exit=0"), "{shown}");
    assert!(
        saw_spinner,
        "a spinner while a step runs; at the end:\n{shown}"
    );
    assert!(!spinner_line(&shown), "the spinner is cleared:\n{shown}");
    let position = |what: &str| {
        shown
            .find(what)
            .unwrap_or_else(|| panic!("{what:?} missing:\n{shown}"))
    };
    let url = position(&format!("URL: http://{slug}.localhost"));
    assert!(position("step 1/5") < position("step 5/5"), "{shown}");
    assert!(position("step 5/5") < url, "{shown}");
}

#[tokio::test]
async fn cli_shows_and_sets_retention_and_streams_usage() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let berth = Berth::new();
    berth.login(&admin).await;

    let list = berth
        .run(&["monitoring", "retention", "-o", "json"])
        .await
        .json();
    assert_eq!(list["schemaVersion"], "retention-defaults.list/v1");
    assert_eq!(list["items"].as_array().unwrap().len(), 6, "{list}");
    let args = [
        "monitoring",
        "set-retention",
        "process-attempts",
        "9",
        "--dry-run",
        "true",
    ];
    assert!(
        berth
            .run(&args)
            .await
            .ok()
            .contains("Saved the retention policy")
    );
    let shown = berth
        .run(&[
            "monitoring",
            "retention",
            "process-attempts",
            "--query",
            "scope=organization",
            "-o",
            "json",
        ])
        .await
        .json();
    assert_eq!(shown["policy"]["retentionDays"], 9, "{shown}");
    assert_eq!(shown["policy"]["dryRunSchedulingEnabled"], true, "{shown}");
    // The API's 422 names the field; the CLI passes it on with a non-zero exit.
    let run = berth
        .run(&["monitoring", "set-retention", "logs", "9"])
        .await;
    assert_ne!(run.code, 0, "{run:#?}");
    assert!(run.stderr.contains("category"), "{run:#?}");

    // Certificates and domain bindings: none yet; asking for one of a binding that does not
    // exist is "not found".
    berth
        .run(&["tls", "certificates", "-o", "json"])
        .await
        .json();
    berth.run(&["tls", "domains", "-o", "json"]).await.json();
    let run = berth.run(&["tls", "issue", "dom-missing"]).await;
    assert_eq!(run.code, NOT_FOUND, "{run:#?}");

    // One usage snapshot, then the CLI leaves the stream.
    let run = berth
        .run(&["monitoring", "usage", "--count", "1"])
        .await
        .ok();
    let lines: Vec<&str> = run.lines().collect();
    assert_eq!(lines.len(), 1, "{run}");
    let snapshot: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(snapshot["schemaVersion"], "runtime-usage.inspect/v1");
}

/// The value of `field` in a `FIELD  value` record view.
fn record_field<'a>(shown: &'a str, field: &str) -> Option<&'a str> {
    shown.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?;
        rest.starts_with("  ").then(|| rest.trim())
    })
}

/// `berth resources show` and `list` say when the declared spec is not what serves: which
/// fields changed, what still serves and how to deploy them; `berth deploy`, as the notice
/// says, deploys them and the notice goes.
#[tokio::test]
async fn cli_says_which_changes_are_not_deployed_and_how_to_deploy_them() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await;
    let (server, _) = ready_server(&admin.rest).await;
    let shop = project(&admin.rest, "Shop").await;
    let prod = environment(&admin.rest, &shop, "prod").await;
    let ids = (shop.as_str(), prod.as_str(), server.as_str());
    let slug = format!("clipending{}", random_suffix());
    let id = sample_resource(&admin, ids, &slug, "berth/sample-app:2", "/healthz").await;
    wait_listed_with(&admin.rest, &id, "succeeded").await;
    let berth = Berth::new();
    berth.login(&admin).await;
    let show = ["resources", "show", slug.as_str()];
    let shown = eventually(WAIT, "the resource shown deployed", || async {
        let shown = berth.run(&show).await.ok();
        (record_field(&shown, "DEPLOYED") == Some("yes")).then_some(shown)
    })
    .await;
    assert!(!shown.contains("changes not deployed"), "{shown}");

    // A new start command, auto-deploy off (the default): the change waits, and says so.
    let start = "exec /bin/sample-app";
    let runtime = [
        "config",
        "runtime",
        "--resource",
        &slug,
        "--start-command",
        start,
    ];
    berth.run(&runtime).await.ok();
    let shown = eventually(WAIT, "the change shown not deployed", || async {
        let shown = berth.run(&show).await.ok();
        let field = record_field(&shown, "DEPLOYED");
        (field == Some("no: runtimeProfile")).then_some(shown)
    })
    .await;
    assert!(
        shown.contains("\nchanges not deployed: runtimeProfile\n")
            && shown.contains("still serves the previous spec")
            && shown.contains(&format!("`berth deploy {slug}`")),
        "{shown}"
    );
    let listed = berth.run(&["resources", "list"]).await.ok();
    let row = listed
        .lines()
        .find(|l| l.contains(&slug))
        .unwrap_or_default();
    assert!(row.contains("no: runtimeProfile"), "{listed}");
    assert!(
        listed.starts_with("ID") && listed.contains("DEPLOYED"),
        "{listed}"
    );
    let listed = berth.run(&["resources", "list", "-o", "json"]).await.json();
    let item = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id.as_str())
        .cloned()
        .expect("the resource is listed");
    assert_eq!(
        item["deployedState"]["changesNotDeployed"],
        json!(["runtimeProfile"]),
        "{item}"
    );
    // Scripts see it too, and nothing but the answer on stdout.
    let whole = berth
        .run(&["resources", "show", &slug, "-o", "json"])
        .await
        .json();
    assert_eq!(whole["deployedState"]["upToDate"], false, "{whole}");

    // Deployed the way the notice says: the notice goes.
    berth.run(&["deploy", &slug]).await.ok();
    let shown = eventually(WAIT, "the change shown deployed", || async {
        let shown = berth.run(&show).await.ok();
        (record_field(&shown, "DEPLOYED") == Some("yes")).then_some(shown)
    })
    .await;
    assert!(!shown.contains("changes not deployed"), "{shown}");

    delete_resource(&admin.rest, &id, &slug).await;
    remove_server(&admin.rest, &server).await;
}
