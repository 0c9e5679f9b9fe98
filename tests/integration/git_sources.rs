//! Deploying from a repository (issue 30) against the stack's git server: a Dockerfile app
//! over smart HTTP deployed from its branch, then a push delivered as a signed GitHub webhook
//! deploying the new commit while kept-alive clients lose no request; redeliveries, bad
//! signatures, refs auto-deploy does not follow and a changed binding deploy nothing; the same
//! commit again reuses its image. A private repository over SSH read with a deploy key (the
//! host key pinned), and a wrong key or pin named in the failure with nothing built. A
//! commands-only repository and static sites built from repositories over git://.

use std::time::Duration;

use berth_crds::deployment::{Deployment, DeploymentPhase, DeploymentState};
use berth_crds::member::OrganizationRole;
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{TestNamespace, client, eventually, random_suffix, stack_env};
use kube::Api;
use serde_json::{Value, json};

use crate::cli::{Berth, binary};
use crate::deploy_support::{Load, delete_resource, ready_server, remove_server, wait_body};
use crate::git_support::{GitRepo, deliver, deliver_as, deploy_key, get, github_push};
use crate::shim_projects_envs::{environment, project};

const WAIT: Duration = Duration::from_secs(150);

/// A busybox web server serving `www/` on 8080. On SIGTERM it drains as Berth asks of an app
/// (README, "Deploying"): its listener closes at once, what it accepted is answered.
const DOCKERFILE: &str = r#"FROM berth/busybox:1
COPY www/ /www/
EXPOSE 8080
CMD ["/bin/sh", "-c", "httpd -f -p 8080 -h /www & pid=$!; trap 'kill $pid; sleep 1; exit 0' TERM; wait"]
"#;

fn page(text: &str) -> String {
    format!("<h1>{text}</h1>\n")
}

/// Waits until Deployment `name` of `namespace` has ended; returns it.
async fn ended(deployments: &Api<Deployment>, name: &str) -> Deployment {
    eventually(WAIT, &format!("deployment {name} ended"), || async {
        let d = deployments.get_opt(name).await.ok()??;
        d.status.as_ref()?.status?.is_terminal().then_some(d)
    })
    .await
}

async fn succeeded(deployments: &Api<Deployment>, name: &str) -> Deployment {
    let deployment = ended(deployments, name).await;
    let status = deployment.status.clone().unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{name}: {:?}",
        status.last_error
    );
    deployment
}

/// Waits until the resource's current generation has its attempt and no attempt still runs.
async fn settled(client: &kube::Client, namespace: &str, resource: &str) {
    let resources = Api::<berth_crds::resource::Resource>::namespaced(client.clone(), namespace);
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let params = kube::api::ListParams::default().labels(&format!("berth.dev/resource={resource}"));
    eventually(WAIT, "the current generation deployed", || async {
        let generation = resources.get(resource).await.ok()?.metadata.generation?;
        let list = deployments.list(&params).await.ok()?;
        let covered = list.items.iter().any(|d| {
            d.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(berth_crds::GENERATION_ANNOTATION))
                == Some(&generation.to_string())
        });
        let ended = list.items.iter().all(|d| {
            d.status
                .as_ref()
                .and_then(|s| s.status)
                .is_some_and(DeploymentState::is_terminal)
        });
        (covered && ended).then_some(())
    })
    .await;
}

/// Names of the resource's attempts.
async fn attempts(deployments: &Api<Deployment>, resource: &str) -> Vec<String> {
    let params = kube::api::ListParams::default().labels(&format!("berth.dev/resource={resource}"));
    let list = deployments.list(&params).await.expect("list deployments");
    list.items.iter().map(kube::ResourceExt::name_any).collect()
}

#[tokio::test]
async fn a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let repo = GitRepo::new("webhook-app");
    repo.write("Dockerfile", DOCKERFILE);
    repo.write("www/index.html", &page("git revision 1"));
    let first = repo.commit("First revision");
    let slug = format!("gitweb{}", random_suffix());
    let host = format!("{slug}.localhost");
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Git web", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "git-public", "locator": repo.http_url(), "gitRef": "main"},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let deployments = Api::<Deployment>::namespaced(client.clone(), &org.namespace);

    // The first attempt builds the branch's newest commit and records it.
    let initial = eventually(WAIT, "the first attempt", || async {
        attempts(&deployments, &id).await.into_iter().next()
    })
    .await;
    let deployed = succeeded(&deployments, &initial).await;
    let commit = deployed
        .status
        .unwrap()
        .source_commit
        .expect("sourceCommit");
    assert_eq!(commit.sha, first);
    assert_eq!(commit.subject, "First revision");
    assert_eq!(commit.author_name, "Ada Tester");
    assert_eq!(commit.git_ref.as_deref(), Some("main"));
    wait_body(port, &host, "git revision 1").await;
    cli_names_the_deployed_commit(&admin, &id, &initial, &first).await;

    // Enabling auto-deploy shows the binding's webhook secret once.
    let enable = json!({"mode": "enable", "refs": ["refs/heads/main"]});
    let policy = admin
        .post(&format!("/resources/{id}/auto-deploy"), enable.clone())
        .await
        .ok();
    let secret = policy["webhookSecret"]
        .as_str()
        .expect("webhookSecret")
        .to_string();
    assert_eq!(secret.len(), 64);
    let again = admin
        .post(&format!("/resources/{id}/auto-deploy"), enable)
        .await
        .ok();
    assert!(again.get("webhookSecret").is_none(), "{again}");
    // Enabling auto-deploy is a spec change, which auto-deploy answers with an attempt of the
    // unchanged branch; let it end, so the push below is the newest attempt and nothing
    // supersedes it.
    settled(&client, &org.namespace, &id).await;

    // A push of revision 2 deploys it while kept-alive clients keep going.
    let load = Load::start(port, &host, 4);
    tokio::time::sleep(Duration::from_secs(1)).await;
    repo.write("www/index.html", &page("git revision 2"));
    let second = repo.commit("Second revision");
    let delivery = format!("delivery-{}", random_suffix());
    let payload = github_push(&repo, "refs/heads/main", &second);
    let (status, receipt) = deliver(&payload, &secret, "push", &delivery).await;
    assert_eq!(status, 202, "{receipt}");
    assert_eq!(receipt["deployments"][0]["resourceId"], id.as_str());
    assert_eq!(receipt["deployments"][0]["duplicate"], false);
    let pushed = receipt["deployments"][0]["deploymentId"]
        .as_str()
        .unwrap()
        .to_string();
    let deployed = succeeded(&deployments, &pushed).await;
    assert_eq!(deployed.spec.trigger.as_deref(), Some("git-push"));
    assert_eq!(deployed.status.unwrap().source_commit.unwrap().sha, second);
    wait_body(port, &host, "git revision 2").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (answered, failures) = load.finish().await;
    eprintln!("kept-alive clients through a pushed deploy: {answered} answered, {failures:?}");
    assert!(
        answered > 50,
        "too few requests to mean anything: {answered}"
    );
    assert!(
        failures.is_empty(),
        "{failures:#?}\nthe edge proxies said: {:#?}",
        crate::deploy_support::edge_proxy_errors(120)
    );

    // The same delivery again starts nothing new.
    let (status, receipt) = deliver(&payload, &secret, "push", &delivery).await;
    assert_eq!(
        (status, &receipt["deployments"][0]["duplicate"]),
        (202, &json!(true))
    );
    // A wrong signature is refused and deploys nothing.
    let before = attempts(&deployments, &id).await.len();
    let (status, refused) = deliver(&payload, "not-the-secret", "push", "forged").await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (401, Some("unauthenticated"))
    );
    // A push to a branch auto-deploy does not follow is ignored, with the reason.
    let feature = github_push(&repo, "refs/heads/feature", &second);
    let (status, receipt) = deliver(&feature, &secret, "push", "feature-1").await;
    assert_eq!(status, 202);
    assert_eq!(
        receipt["ignored"][0]["reason"], "ref-not-followed",
        "{receipt}"
    );
    // GitHub's ping when the hook is created: verified, nothing to do.
    let (status, receipt) = deliver(&payload, &secret, "ping", "ping-1").await;
    assert_eq!(
        (status, &receipt["ignored"][0]["reason"]),
        (202, &json!("not-a-push"))
    );
    assert_eq!(attempts(&deployments, &id).await.len(), before);

    // The same commit deployed again reuses its image: no rebuild.
    let start =
        json!({"projectId": shop, "environmentId": prod, "serverId": server, "resourceId": id});
    let again = admin.post("/deployments", start.clone()).await.expect(201);
    let again = again["id"].as_str().unwrap().to_string();
    succeeded(&deployments, &again).await;
    let timeline = admin
        .get(&format!(
            "/resources/{id}/deployments/{again}/timeline?limit=1000"
        ))
        .await
        .ok();
    let text = timeline.to_string();
    assert!(
        text.contains("Reusing the image built from commit"),
        "{text}"
    );
    assert!(!text.contains("Building the Dockerfile"), "{text}");

    // From CI: a deploy token with `source-link-deploy` and the repository in its scope deploys
    // a given commit; without either it is refused.
    // The last two segments of the repository's path, as a git host names it.
    let full_name = format!("git/{}", repo.name);
    let ci_scope =
        json!({"workflowCommands": ["source-link-deploy"], "repositoryFullNames": [full_name]});
    let (_, ci_token) = crate::shim_tokens::create_token(&admin, &org.id, ci_scope).await;
    let ci = admin.with_token(&ci_token);
    let pinned = json!({"projectId": shop, "environmentId": prod, "serverId": server,
        "resourceId": id, "commitSha": first});
    let by_ci = ci.post("/deployments", pinned.clone()).await.expect(201);
    let by_ci = by_ci["id"].as_str().unwrap().to_string();
    let deployed = succeeded(&deployments, &by_ci).await;
    assert_eq!(deployed.status.unwrap().source_commit.unwrap().sha, first);
    wait_body(port, &host, "git revision 1").await;
    for scope in [
        json!({"workflowCommands": ["preview-cleanup"]}),
        json!({"workflowCommands": ["source-link-deploy"], "repositoryFullNames": ["stack/another"]}),
    ] {
        let (_, token) = crate::shim_tokens::create_token(&admin, &org.id, scope).await;
        admin
            .with_token(&token)
            .post("/deployments", pinned.clone())
            .await
            .error(403, "forbidden");
    }
    let bad_sha = json!({"projectId": shop, "environmentId": prod, "serverId": server,
        "resourceId": id, "commitSha": "abc"});
    let refused = admin.post("/deployments", bad_sha).await.expect(422);
    assert_eq!(refused["error"]["details"]["field"], "commitSha");

    // Another branch as the source: the binding changed, so auto-deploy blocks until confirmed.
    repo.branch("release");
    repo.write("www/index.html", &page("git release"));
    let release = repo.commit("Release");
    let moved =
        json!({"source": {"kind": "git-public", "locator": repo.http_url(), "gitRef": "release"}});
    admin
        .post(&format!("/resources/{id}/source"), moved)
        .await
        .ok();
    let policy = admin
        .get(&format!("/resources/{id}/auto-deploy"))
        .await
        .ok();
    assert_eq!(policy["status"], "blocked");
    assert_eq!(policy["blockedReason"], "source-binding-changed");
    let pushed = github_push(&repo, "refs/heads/main", &second);
    let (_, receipt) = deliver(&pushed, &secret, "push", "after-move").await;
    assert_eq!(
        receipt["ignored"][0]["reason"], "source-binding-changed",
        "{receipt}"
    );
    // Confirmed for the release branch, its push deploys.
    let confirm = json!({"mode": "enable", "refs": ["refs/heads/release"]});
    admin
        .post(&format!("/resources/{id}/auto-deploy"), confirm)
        .await
        .ok();
    // Confirming is a spec change too: its attempt ends first, so it cannot supersede the push.
    settled(&client, &org.namespace, &id).await;
    let release_push = github_push(&repo, "refs/heads/release", &release);
    let (_, receipt) = deliver(&release_push, &secret, "push", "release-1").await;
    let deployment = receipt["deployments"][0]["deploymentId"]
        .as_str()
        .unwrap()
        .to_string();
    succeeded(&deployments, &deployment).await;
    wait_body(port, &host, "git release").await;

    // GitLab sends the secret as its token, Gitea signs like GitHub without the prefix.
    let gitlab = json!({
        "ref": "refs/heads/release", "checkout_sha": release, "user_name": "Ada",
        "project": { "git_http_url": repo.http_url(), "git_ssh_url": repo.ssh_url() },
    });
    let token = |value: &str| {
        vec![
            ("x-gitlab-event", "Push Hook".to_string()),
            ("x-gitlab-token", value.to_string()),
        ]
    };
    let (status, receipt) = deliver_as("gitlab", &token(&secret), &gitlab).await;
    assert_eq!(
        (status, &receipt["deployments"][0]["duplicate"]),
        (202, &json!(false)),
        "{receipt}"
    );
    let gitlab_attempt = receipt["deployments"][0]["deploymentId"]
        .as_str()
        .unwrap()
        .to_string();
    succeeded(&deployments, &gitlab_attempt).await;
    assert_eq!(deliver_as("gitlab", &token("wrong"), &gitlab).await.0, 401);
    let gitea = github_push(&repo, "refs/heads/feature", &release);
    let body = serde_json::to_vec(&gitea).unwrap();
    let signature = crate::git_support::github_signature(&secret, &body);
    let headers = vec![
        ("x-gitea-event", "push".to_string()),
        (
            "x-gitea-signature",
            signature.trim_start_matches("sha256=").to_string(),
        ),
    ];
    let (status, receipt) = deliver_as("gitea", &headers, &gitea).await;
    assert_eq!(
        (status, &receipt["ignored"][0]["reason"]),
        (202, &json!("ref-not-followed"))
    );
    assert_eq!(deliver_as("bitbucket", &headers, &gitea).await.0, 422);

    // The webhook secret never reaches a log.
    for variable in ["BERTH_SHIM_LOG", "BERTH_CONTROLLER_LOG"] {
        let log = std::fs::read_to_string(std::env::var(variable).unwrap()).unwrap();
        assert!(
            !log.contains(&secret),
            "the webhook secret is in {variable}"
        );
    }
    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}

/// Applies `manifest` with kubectl.
/// `berth deployments list` and `show` name the commit an attempt deployed: its SHA, subject
/// and (show) author.
async fn cli_names_the_deployed_commit(admin: &Rest, resource: &str, attempt: &str, sha: &str) {
    let token = admin.token.clone().expect("a signed-in caller");
    let env = [("BERTH_TOKEN", token.as_str())];
    let berth = Berth::new();
    let list = ["deployments", "list", "--resource", resource];
    let listed = berth.run_with(&binary(), &list, None, &env).await.ok();
    let row = listed.lines().find(|line| line.contains(attempt));
    let row = row.unwrap_or_else(|| panic!("{attempt} not listed: {listed}"));
    assert!(
        row.contains(sha) && row.contains("First revision"),
        "{listed}"
    );
    let show = ["deployments", "show", attempt];
    let shown = berth.run_with(&binary(), &show, None, &env).await.ok();
    for expected in [sha, "First revision", "Ada Tester"] {
        assert!(shown.contains(expected), "{expected} missing: {shown}");
    }
}

fn apply(manifest: &Value) {
    let output = berth_tests::kubectl(&["apply", "-f", "-"], Some(&manifest.to_string()));
    assert!(output.status.success(), "kubectl apply: {output:?}");
}

fn git_resource(ns: &TestNamespace, name: &str, source: Value, extra: Value) -> Value {
    let mut spec = json!({
        "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
        "name": name, "kind": "application", "source": source,
        "networkProfile": { "internalPort": 8080 },
    });
    for (key, value) in extra.as_object().unwrap() {
        spec[key] = value.clone();
    }
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": name, "namespace": ns.name },
        "spec": spec,
    })
}

/// Deletes the resources and waits until the namespace's containers are gone.
async fn teardown(ns: &TestNamespace, names: &[&str]) {
    for name in &names[1..] {
        let output = berth_tests::kubectl(
            &["delete", "resource.berth.dev", name, "-n", &ns.name],
            None,
        );
        assert!(output.status.success(), "{output:?}");
    }
    crate::deployments::teardown(ns, names[0]).await;
}

/// An SshCredential `name` holding `key` (PEM) in its Secret.
async fn credential(ns: &TestNamespace, name: &str, key: &str) {
    crate::servers::support::create_credential(ns, name, key).await;
}

/// A new ed25519 key (PEM) no server or repository knows.
pub(crate) fn unknown_key() -> String {
    let dir = std::env::temp_dir().join(format!("berth-key-{}", random_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("key");
    let status = std::process::Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-f",
            path.to_str().unwrap(),
        ])
        .status()
        .expect("ssh-keygen (tests only)");
    assert!(status.success());
    let key = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_dir_all(dir);
    key
}

#[tokio::test]
async fn a_private_repository_is_read_with_a_deploy_key_and_a_wrong_key_or_pin_is_named() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "git-ssh").await;
    let port = crate::deployments::ready_server(&ns).await;
    let repo = GitRepo::new("private-app");
    repo.write("Dockerfile", DOCKERFILE);
    repo.write("www/index.html", &page("private revision"));
    let sha = repo.commit("Private");
    credential(&ns, "deploy", &deploy_key()).await;
    credential(&ns, "stranger", &unknown_key()).await;
    let source = |credential: &str, pin: Option<&str>| {
        let mut metadata = json!({ "credentialId": credential });
        if let Some(pin) = pin {
            metadata["hostKeyFingerprint"] = json!(pin);
        }
        json!({ "kind": "git-deploy-key", "locator": repo.ssh_url(), "metadata": metadata })
    };
    let deployments = ns.api::<Deployment>();

    apply(&git_resource(
        &ns,
        "private",
        source("deploy", None),
        json!({}),
    ));
    let deployed = succeeded(&deployments, "dep-private-1").await;
    let commit = deployed.status.unwrap().source_commit.unwrap();
    assert_eq!(commit.sha, sha);
    // Pinned on first contact: the stack sshd's key, as `ssh-keygen -l` prints it.
    let host_key = stack_env("BERTH_SSH_HOST_KEY_FINGERPRINT");
    assert_eq!(
        commit.host_key_fingerprint.as_deref(),
        Some(host_key.as_str())
    );
    wait_body(port, "private.localhost", "private revision").await;

    // A key the repository does not know: the failure names the repository and the key.
    apply(&git_resource(
        &ns,
        "stranger",
        source("stranger", None),
        json!({}),
    ));
    let failed = ended(&deployments, "dep-stranger-1").await.status.unwrap();
    assert_eq!(failed.status, Some(DeploymentState::Failed));
    let error = failed.last_error.unwrap();
    assert_eq!(
        (error.phase, error.code.as_str()),
        (DeploymentPhase::Package, "source_fetch_failed")
    );
    assert!(
        error.message.contains(&format!("/{}", repo.name)),
        "{}",
        error.message
    );
    assert!(error.message.contains("deploy key"), "{}", error.message);
    assert!(
        crate::deploy_support::built_images(&ns.name, "stranger").is_empty(),
        "nothing is built"
    );

    // A pin the host does not match: refused before the key is offered.
    let wrong_pin = "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    apply(&git_resource(
        &ns,
        "pinned",
        source("deploy", Some(wrong_pin)),
        json!({}),
    ));
    let failed = ended(&deployments, "dep-pinned-1").await.status.unwrap();
    let error = failed.last_error.unwrap();
    assert_eq!(
        error.code.as_str(),
        "source_host_key_mismatch",
        "{}",
        error.message
    );
    assert!(error.message.contains(&host_key), "{}", error.message);
    assert!(
        crate::deploy_support::built_images(&ns.name, "pinned").is_empty(),
        "nothing is built"
    );
    teardown(&ns, &["private", "stranger", "pinned"]).await;
}

#[tokio::test]
async fn a_commands_only_repository_and_static_sites_build_from_their_repositories() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "git-build").await;
    let port = crate::deployments::ready_server(&ns).await;
    let deployments = ns.api::<Deployment>();

    // No Dockerfile: Berth writes one around the install, build and start commands.
    let app = GitRepo::new("commands-app");
    app.write("VERSION", "1.4.2\n");
    app.write("src/greeting.txt", "hello from the workspace\n");
    app.commit("Commands only");
    apply(&git_resource(
        &ns,
        "workspace",
        json!({ "kind": "git-public", "locator": app.daemon_url() }),
        json!({ "runtimeProfile": {
            "baseImage": "berth/busybox:1",
            "installCommand": "mkdir -p www && cp src/greeting.txt www/installed.txt",
            "buildCommand": "echo \"<h1>built $(cat VERSION)</h1>\" > www/index.html",
            "startCommand": "exec httpd -f -p 8080 -h /workspace/www",
            "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 },
        }}),
    ));
    succeeded(&deployments, "dep-workspace-1").await;
    wait_body(port, "workspace.localhost", "built 1.4.2").await;
    let installed = get(port, "workspace.localhost", "/installed.txt").await;
    assert_eq!(installed, (200, "hello from the workspace\n".to_string()));

    // A static site whose build command writes the published files.
    let site = GitRepo::new("static-site");
    site.write("site/src/index.html", "<h1>TITLE</h1>\n");
    site.commit("Site sources");
    apply(&json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": "docs", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": "docs", "kind": "static-site",
            "source": { "kind": "git-public", "locator": site.daemon_url(), "baseDirectory": "site" },
            "runtimeProfile": {
                "baseImage": "berth/busybox:1",
                "buildCommand": "mkdir -p dist && sed 's/TITLE/built docs/' src/index.html > dist/index.html",
                "publishDirectory": "dist",
                "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 },
            },
        },
    }));
    succeeded(&deployments, "dep-docs-1").await;
    wait_body(port, "docs.localhost", "built docs").await;
    let sources = get(port, "docs.localhost", "/src/index.html").await;
    assert_eq!(sources.0, 404, "only the publish directory is served");

    // Nothing declared and no Dockerfile: a repository of an index.html is served as it is.
    let plain = GitRepo::new("plain-site");
    plain.write("index.html", "<h1>plain page</h1>\n");
    plain.commit("Plain");
    apply(&git_resource(
        &ns,
        "plain",
        json!({ "kind": "git-public", "locator": plain.http_url() }),
        json!({ "runtimeProfile": { "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 } } }),
    ));
    succeeded(&deployments, "dep-plain-1").await;
    wait_body(port, "plain.localhost", "plain page").await;
    teardown(&ns, &["workspace", "docs", "plain"]).await;
}

#[tokio::test]
async fn a_start_command_replaces_the_image_command() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "start-cmd").await;
    let port = crate::deployments::ready_server(&ns).await;
    let marker = format!("started-by-berth-{}", random_suffix());
    apply(&git_resource(
        &ns,
        "busy",
        json!({ "kind": "docker-image", "locator": "berth/busybox:1" }),
        json!({ "runtimeProfile": {
            "startCommand": format!("mkdir -p /www && echo {marker} > /www/index.html && exec httpd -f -p 8080 -h /www"),
            "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 },
        }}),
    ));
    succeeded(&ns.api::<Deployment>(), "dep-busy-1").await;
    wait_body(port, "busy.localhost", &marker).await;
    teardown(&ns, &["busy"]).await;
}
