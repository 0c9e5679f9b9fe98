//! The web console driven in a real Chromium (Debian's, through playwright-core): the flows of
//! `apiserver-shim/console/tests/` run against this suite's berth-shim, as the owner and a
//! member of a fresh organization with a ready server. Screenshots of every page land in
//! `.berth/console-shots/`. `hack/test.sh` installs Chromium and the console's npm packages.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_tests::rest::{TestOrg, base_url};
use berth_tests::{client, repo_root};

use crate::deploy_support::{ready_server, remove_server};
use crate::deployments_build::Scratch;
use crate::git_support::GitRepo;

/// Every flow of the file, each deploy included, on two busy cores.
const FLOWS: Duration = Duration::from_secs(900);

/// A build that would take five minutes: the console cancels it.
const SLOW_BUILD: &str = "FROM berth/busybox:1\nRUN sleep 300\nCOPY www/ /www/\n\
                          CMD [\"httpd\", \"-f\", \"-p\", \"8080\", \"-h\", \"/www\"]\n";

/// The app of the git repository whose deployed commit the console shows.
const GIT_APP: &str = r#"FROM berth/busybox:1
COPY www/ /www/
EXPOSE 8080
CMD ["/bin/sh", "-c", "httpd -f -p 8080 -h /www & pid=$!; trap 'kill $pid; exit 0' TERM; wait"]
"#;

fn console_dir() -> PathBuf {
    repo_root().join("apiserver-shim/console")
}

/// Runs `flows` (files or folders of `apiserver-shim/console/`) with node's test runner as the
/// owner and a member of a fresh organization with a ready server; asserts that they pass and
/// that the console deleted every resource it created.
async fn run_flows(flows: &[&str]) {
    assert!(
        console_dir().join("node_modules/playwright-core").is_dir(),
        "the console's npm packages are missing: run hack/console.sh deps (hack/test.sh does)"
    );
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let owner = org.user(OrganizationRole::Owner).await;
    let member = org.user(OrganizationRole::Member).await;
    let (server, _) = ready_server(&owner.rest).await;
    let slow = Scratch::new();
    slow.write("Dockerfile", SLOW_BUILD);
    slow.write("www/index.html", "never served\n");
    let repo = GitRepo::new("console-app");
    repo.write("Dockerfile", GIT_APP);
    repo.write("www/index.html", "console git revision\n");
    let sha = repo.commit("Console revision");
    let shots = repo_root().join(".berth/console-shots");

    let run = tokio::process::Command::new("node")
        .args(["--test", "--test-concurrency=1"])
        .args(flows)
        .current_dir(console_dir())
        .env("BERTH_CONSOLE_URL", base_url().trim_end_matches("/api"))
        .env("BERTH_CONSOLE_OWNER_EMAIL", &owner.email)
        .env("BERTH_CONSOLE_OWNER_PASSWORD", &owner.password)
        .env("BERTH_CONSOLE_MEMBER_EMAIL", &member.email)
        .env("BERTH_CONSOLE_MEMBER_PASSWORD", &member.password)
        .env("BERTH_CONSOLE_SERVER_ID", &server)
        .env("BERTH_CONSOLE_SLOW_FOLDER", slow.path())
        .env("BERTH_CONSOLE_GIT_URL", repo.http_url())
        .env("BERTH_CONSOLE_GIT_SHA", &sha)
        .env("BERTH_CONSOLE_SHOTS", &shots)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(FLOWS, run)
        .await
        .expect("the browser flows finish in time")
        .expect("node runs");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "browser flows failed (screenshots in {}):\n{report}\n{}",
        shots.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    // The console deleted what it created: nothing is left to hold the server.
    let left = owner.rest.get("/resources").await.ok();
    assert_eq!(left["items"].as_array().map(Vec::len), Some(0), "{left}");
    remove_server(&owner.rest, &server).await;
}

/// Every `*.test.mjs` flow of `tests/`.
#[tokio::test]
async fn the_console_deploys_observes_configures_and_deletes_an_app_in_a_real_browser() {
    run_flows(&["tests/"]).await;
}

/// Issue 47: the resource page's "Changes not deployed" notice and its Deploy button
/// (`tests/deployed.flow.mjs`, which `node --test tests/` does not pick up).
#[tokio::test]
async fn the_console_says_changes_not_deployed_and_its_deploy_button_deploys_them() {
    run_flows(&["tests/deployed.flow.mjs"]).await;
}

/// Issue 43: a resource's Tasks tab and the organization's Notifications page
/// (`tests/tasks-notifications.flow.mjs`).
#[tokio::test]
async fn the_console_runs_a_task_shows_its_logs_and_tests_a_notification_channel() {
    run_flows(&["tests/tasks-notifications.flow.mjs"]).await;
}

/// Issue 42: the Databases page backs up a managed Redis, follows the backup until it is
/// proven and restores it in place (`tests/databases.flow.mjs`).
#[tokio::test]
async fn the_console_backs_up_a_database_and_restores_it_in_place() {
    crate::dependency_resources::registry_image("berth/redis:7");
    run_flows(&["tests/databases.flow.mjs"]).await;
}

/// Issue 41: the Databases page provisions a managed PostgreSQL from its form, binds it to an
/// app, refuses its delete while bound naming the binding, rotates its login to the end,
/// unbinds it and deletes it with its data volume (`tests/databases-manage.flow.mjs`).
#[tokio::test]
async fn the_console_provisions_binds_rotates_and_deletes_a_database() {
    crate::dependency_resources::registry_image("berth/postgres:15");
    run_flows(&["tests/databases-manage.flow.mjs"]).await;
}
