//! Preview environments per pull request (issue 44) against the stack's git server, edge proxy
//! and Docker: a signed `pull_request` delivery deploys the PR's head at its own host name
//! while production keeps serving main; a push to the PR redeploys the same preview; a replay
//! changes nothing; a fork's PR deploys nothing by default; a wrong signature is refused; the
//! quota holds the next preview waiting; an expired preview and a closed PR leave nothing with
//! the preview's label behind (objects, containers, networks, volumes, images, route), and the
//! leftovers check lists what was left with a gone preview's label.

use std::time::Duration;

use berth_crds::member::OrganizationRole;
use berth_crds::preview::{PREVIEW_LABEL, PreviewEnvironment};
use berth_tests::rest::{Rest, TestOrg};
use berth_tests::{client, eventually, eventually_explained, random_suffix};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::deploy_support::{
    delete_resource, docker_lines, docker_names, fetch, networks, ready_server, remove_server,
    volumes, wait_body,
};
use crate::git_support::{GitRepo, deliver, deliver_as, github_signature};
use crate::shim_projects_envs::{environment, project};

const WAIT: Duration = Duration::from_secs(150);
/// The issue's promise: a closed pull request's preview is gone within a minute.
const CLEANED_WITHIN: Duration = Duration::from_secs(60);

pub(crate) const DOCKERFILE: &str = r#"FROM berth/busybox:1
COPY www/ /www/
EXPOSE 8080
CMD ["/bin/sh", "-c", "httpd -f -p 8080 -h /www & pid=$!; trap 'kill $pid; sleep 1; exit 0' TERM; wait"]
"#;

pub(crate) fn page(text: &str) -> String {
    format!("<h1>{text}</h1>\n")
}

/// An Environment of project `project`, as kubectl applies it.
pub(crate) fn environment_object(namespace: &str, name: &str, project: &str) -> Value {
    json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Environment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"projectId": project, "name": "Production", "kind": "production"}})
}

/// Pull request `number`'s preview of `resource` of `project` at `head` on `head_ref` of
/// `repo`, made from CI (provider `api`), as kubectl applies it: `<resource>-pr-<number>`.
pub(crate) fn preview_object(
    namespace: &str,
    (project, resource): (&str, &str),
    repo: &GitRepo,
    number: u64,
    (head_ref, head): (&str, &str),
) -> Value {
    let full_name = format!("stack/{}", repo.name);
    json!({"apiVersion": "berth.dev/v1alpha1", "kind": "PreviewEnvironment",
        "metadata": {"name": format!("{resource}-pr-{number}"), "namespace": namespace},
        "spec": {"projectId": project, "resourceId": resource,
            "pushedAt": k8s_openapi::jiff::Timestamp::now().to_string(),
            "source": {"provider": "api", "repositoryFullName": full_name,
                "headRepositoryFullName": full_name, "headRepositoryUrl": repo.http_url(),
                "pullRequestNumber": number, "baseRef": "main", "headRef": head_ref,
                "headSha": head}}})
}

/// Closes preview `name` as a pull request's closing does: deletes it, without waiting.
pub(crate) fn close(namespace: &str, name: &str) {
    let delete = [
        "delete",
        "previewenvironment.berth.dev",
        name,
        "-n",
        namespace,
    ];
    let deleted = berth_tests::kubectl(&[&delete[..], &["--wait=false"]].concat(), None);
    assert!(deleted.status.success(), "{deleted:?}");
}

/// `objects` as one List for `kubectl apply`.
pub(crate) fn object_list(objects: &[Value]) -> String {
    json!({"apiVersion": "v1", "kind": "List", "items": objects}).to_string()
}

/// A GitHub `pull_request` payload for PR `number` of `repo`, its head `sha` on `head_ref`
/// of `head_repo` (`owner/name`; another than the base's for a fork).
fn pull_request(repo: &GitRepo, action: &str, number: u64, head: (&str, &str, &str)) -> Value {
    let (head_repo, head_ref, sha) = head;
    let base_repo = format!("stack/{}", repo.name);
    json!({
        "action": action,
        "number": number,
        "pull_request": {
            "number": number,
            "state": if action == "closed" { "closed" } else { "open" },
            "head": {"ref": head_ref, "sha": sha, "repo": {"full_name": head_repo, "clone_url": repo.http_url()}},
            "base": {"ref": "main", "repo": {"full_name": base_repo, "clone_url": repo.http_url()}},
        },
        "repository": {"full_name": base_repo, "clone_url": repo.http_url(), "default_branch": "main"},
    })
}

struct Setup {
    client: kube::Client,
    project: String,
    environment: String,
    admin: Rest,
    namespace: String,
    repo: GitRepo,
    port: u16,
    resource: String,
    slug: String,
    secret: String,
    base_repo: String,
}

impl Setup {
    async fn open(&self, action: &str, number: u64, head_ref: &str, sha: &str) -> Value {
        let payload = pull_request(&self.repo, action, number, (&self.base_repo, head_ref, sha));
        let delivery = format!("pr-{number}-{action}-{}", random_suffix());
        let (status, receipt) = deliver(&payload, &self.secret, "pull_request", &delivery).await;
        assert_eq!(status, 202, "{receipt}");
        receipt
    }

    fn previews(&self) -> Api<PreviewEnvironment> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn host(&self, number: u64) -> String {
        format!("pr-{number}-{}.localhost", self.slug)
    }

    /// Waits until the preview's record says it is ready; the record.
    async fn serving(&self, id: &str, sha: &str) -> Value {
        eventually(WAIT, &format!("preview {id} serving {sha}"), || async {
            let shown = self.admin.get(&format!("/preview-environments/{id}")).await;
            let record = shown.ok()["previewEnvironment"].clone();
            (record["ready"]["status"] == "True" && record["servingSha"] == sha).then_some(record)
        })
        .await
    }
}

/// The single preview answer of a receipt.
fn preview_of(receipt: &Value) -> &Value {
    let previews = receipt["previews"]
        .as_array()
        .expect("previews in the receipt");
    assert_eq!(previews.len(), 1, "{receipt}");
    &previews[0]
}

#[tokio::test]
async fn a_pull_request_gets_its_own_preview_that_follows_its_head_and_leaves_nothing_when_closed()
{
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let (server, port) = ready_server(&admin).await;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    let repo = GitRepo::new("preview-app");
    repo.write("Dockerfile", DOCKERFILE);
    repo.write("www/index.html", &page("main revision"));
    repo.commit("Main");
    let slug = format!("pv{}", random_suffix());
    let created = admin
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Preview web", "slug": slug,
                "kind": "application", "serverId": server,
                "source": {"kind": "git-public", "locator": repo.http_url(), "gitRef": "main"},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/", "intervalSeconds": 1, "retries": 2}},
            }),
        )
        .await
        .ok();
    let resource = created["id"].as_str().unwrap().to_string();
    let production = format!("{slug}.localhost");
    wait_body(port, &production, "main revision").await;
    // The binding's webhook secret, which verifies pull-request deliveries as it does pushes.
    let enable = json!({"mode": "enable", "refs": ["refs/heads/main"]});
    let policy = admin
        .post(&format!("/resources/{resource}/auto-deploy"), enable)
        .await
        .ok();
    let secret = policy["webhookSecret"].as_str().unwrap().to_string();
    let s = Setup {
        client: client.clone(),
        project: shop.clone(),
        environment: prod.clone(),
        admin,
        namespace: org.namespace.clone(),
        base_repo: format!("stack/{}", repo.name),
        repo,
        port,
        resource: resource.clone(),
        slug: slug.clone(),
        secret,
    };

    // Opened: the PR's head serves at pr-7-<slug> while production serves main.
    s.repo.branch("feature");
    s.repo
        .write("www/index.html", &page("pull request revision 1"));
    let first = s.repo.commit("PR revision 1");
    let receipt = s.open("opened", 7, "feature", &first).await;
    let opened = preview_of(&receipt);
    assert_eq!(
        (&opened["action"], &opened["resourceId"]),
        (&json!("created"), &json!(resource))
    );
    let id = opened["previewEnvironmentId"].as_str().unwrap().to_string();
    let record = s.serving(&id, &first).await;
    assert_eq!(record["source"]["pullRequestNumber"], 7);
    assert_eq!(record["status"], "active");
    assert!(
        record["url"].as_str().unwrap().contains(&s.host(7)),
        "{record}"
    );
    wait_body(port, &s.host(7), "pull request revision 1").await;
    wait_body(port, &production, "main revision").await;

    // Synchronize: the new head at the same URL, still one preview; a replay changes nothing.
    s.repo
        .write("www/index.html", &page("pull request revision 2"));
    let second = s.repo.commit("PR revision 2");
    let receipt = s.open("synchronize", 7, "feature", &second).await;
    assert_eq!(preview_of(&receipt)["action"], "updated", "{receipt}");
    s.serving(&id, &second).await;
    wait_body(port, &s.host(7), "pull request revision 2").await;
    let listed = s
        .admin
        .get(&format!("/preview-environments?resourceId={resource}"))
        .await
        .ok();
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let receipt = s.open("synchronize", 7, "feature", &second).await;
    assert_eq!(preview_of(&receipt)["action"], "unchanged", "{receipt}");
    assert_eq!(attempts_of(&s, &id).await, 2, "one attempt per head commit");

    // Another PR's preview: each serves on its own network, reaching neither the other's
    // containers nor production's.
    let receipt = s.open("opened", 12, "feature", &second).await;
    let other = preview_of(&receipt)["previewEnvironmentId"]
        .as_str()
        .unwrap()
        .to_string();
    s.serving(&other, &second).await;
    wait_body(port, &s.host(12), "pull request revision 2").await;
    assert_isolated(&other, &[&id, &resource]);
    assert_isolated(&id, &[&other, &resource]);
    s.open("closed", 12, "feature", &second).await;
    assert_cleaned(&s, &other).await;
    leftovers_listed(&s, &server, &other).await;

    refusals(&s, &second).await;
    other_forges(&s, &second).await;
    quota_and_expiry(&s, &second).await;
    from_ci(&s, &server, &second).await;

    // Closed: within a minute nothing with the preview's label is left and its host is 404;
    // production is untouched.
    let receipt = s.open("closed", 7, "feature", &second).await;
    assert_eq!(
        preview_of(&receipt)["action"],
        "cleanup-requested",
        "{receipt}"
    );
    assert_cleaned(&s, &id).await;
    wait_body(port, &production, "main revision").await;

    delete_resource(&s.admin, &resource, &slug).await;
    remove_server(&s.admin, &server).await;
    drop(org);
}

/// From CI without a forge webhook: `POST /deployments` with `preview` deploys the commit as
/// the PR's preview; the spec's `previewEnvironmentId` answers for it; `DELETE` cleans it.
async fn from_ci(s: &Setup, server: &str, sha: &str) {
    let start = json!({
        "projectId": s.project, "serverId": server, "resourceId": s.resource,
        "environmentId": s.environment, "commitSha": sha,
        "gitRef": "feature", "preview": {"kind": "pull-request", "previewId": "pr-13"},
    });
    let started = s
        .admin
        .post("/deployments", start.clone())
        .await
        .expect(201);
    let id = format!("{}-pr-13", s.resource);
    assert!(
        started["id"].as_str().unwrap().starts_with(&id),
        "{started}"
    );
    s.serving(&id, sha).await;
    wait_body(s.port, &s.host(13), "pull request revision 2").await;
    let mut bad = start.clone();
    bad["preview"]["previewId"] = json!("feature-x");
    let refused = s.admin.post("/deployments", bad).await.expect(422);
    assert_eq!(refused["error"]["details"]["field"], "preview.previewId");
    let health = format!("/resources/{}/health?previewEnvironmentId=", s.resource);
    s.admin.get(&format!("{health}{id}")).await.expect(200);
    s.admin.get(&format!("{health}nope-pr-1")).await.expect(404);

    let cleaned = s
        .admin
        .delete(&format!("/preview-environments/{id}"), json!({}))
        .await
        .ok();
    assert_eq!(cleaned["status"], "cleaned", "{cleaned}");
    assert_cleaned(s, &id).await;
    let again = s
        .admin
        .delete(&format!("/preview-environments/{id}"), json!({}))
        .await
        .ok();
    assert_eq!(again["status"], "already-clean", "{again}");
}

/// Gitea's pull_request and GitLab's merge request events open and close previews too (GitLab
/// proves a delivery with the secret itself as its token).
async fn other_forges(s: &Setup, sha: &str) {
    let payload = pull_request(&s.repo, "opened", 14, (&s.base_repo, "feature", sha));
    let body = serde_json::to_vec(&payload).unwrap();
    let signature = github_signature(&s.secret, &body);
    let gitea = [
        ("x-gitea-event", "pull_request".to_string()),
        ("x-gitea-delivery", format!("gitea-{}", random_suffix())),
        (
            "x-gitea-signature",
            signature.trim_start_matches("sha256=").to_string(),
        ),
    ];
    let (status, receipt) = deliver_as("gitea", &gitea, &payload).await;
    assert_eq!(status, 202, "{receipt}");
    assert_eq!(preview_of(&receipt)["action"], "created", "{receipt}");
    let id = preview_of(&receipt)["previewEnvironmentId"]
        .as_str()
        .unwrap()
        .to_string();

    let merged = json!({
        "object_kind": "merge_request",
        "project": {"path_with_namespace": s.base_repo, "git_http_url": s.repo.http_url()},
        "repository": {"git_http_url": s.repo.http_url()},
        "object_attributes": {
            "iid": 14, "action": "merge", "source_branch": "feature", "target_branch": "main",
            "last_commit": {"id": sha},
            "source": {"path_with_namespace": s.base_repo, "git_http_url": s.repo.http_url()},
            "target": {"path_with_namespace": s.base_repo, "git_http_url": s.repo.http_url()},
        },
    });
    let gitlab = [
        ("x-gitlab-event", "Merge Request Hook".to_string()),
        ("x-gitlab-token", s.secret.clone()),
    ];
    let (status, receipt) = deliver_as("gitlab", &gitlab, &merged).await;
    assert_eq!(status, 202, "{receipt}");
    assert_eq!(
        preview_of(&receipt)["action"],
        "cleanup-requested",
        "{receipt}"
    );
    assert_cleaned(s, &id).await;
}

/// A fork's PR deploys nothing by default and says why; a forged delivery is refused.
async fn refusals(s: &Setup, sha: &str) {
    let fork = pull_request(&s.repo, "opened", 8, ("mallory/fork", "evil", sha));
    let (status, receipt) = deliver(&fork, &s.secret, "pull_request", "fork-8").await;
    assert_eq!(status, 202, "{receipt}");
    let ignored = preview_of(&receipt);
    assert_eq!(
        (&ignored["action"], &ignored["reason"]),
        (&json!("ignored"), &json!("preview-fork-disabled")),
        "{receipt}"
    );
    assert!(
        s.previews()
            .get_opt(&format!("{}-pr-8", s.resource))
            .await
            .unwrap()
            .is_none()
    );
    let (status, refused) = deliver(&fork, "not-the-secret", "pull_request", "forged-8").await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (401, Some("unauthenticated"))
    );
}

/// With `maxActivePreviews: 1` a second PR waits with its reason; a preview whose time to
/// live passed is removed (its last push moved back, as if hours had gone by).
async fn quota_and_expiry(s: &Setup, sha: &str) {
    let scope = json!({"kind": "resource", "projectId": s.project, "resourceId": s.resource});
    let configured =
        json!({"scope": scope, "policy": {"maxActivePreviews": 1, "previewTtlHours": 1}});
    let id = s
        .admin
        .post("/preview-policies", configured)
        .await
        .expect(201)["id"]
        .clone();
    let shown = s
        .admin
        .post("/preview-policies/show", json!({"scope": scope}))
        .await
        .ok();
    assert_eq!(
        shown["policy"]["settings"]["maxActivePreviews"], 1,
        "{shown}"
    );
    assert_eq!(shown["policy"]["source"], "configured");
    assert_eq!(shown["policy"]["id"], id);
    assert_eq!(shown["policy"]["settings"]["previewTlsMode"], "disabled");
    // A domain template that renders no host name is refused, naming the field, and the
    // policy stays as it was.
    for (template, why) in [
        ("{branch}.previews.test", "{branch}"),
        ("pr-{pr_number}", "host name"),
    ] {
        let bad = json!({"scope": scope, "policy": {"previewDomainTemplate": template}});
        let refused = s.admin.post("/preview-policies", bad).await.expect(422);
        let error = &refused["error"];
        assert_eq!(
            error["details"]["field"], "policy.previewDomainTemplate",
            "{refused}"
        );
        assert!(
            error["message"].as_str().unwrap().contains(why),
            "{refused}"
        );
    }
    let bad = json!({"scope": scope, "policy": {"previewTlsMode": "manual"}});
    s.admin.post("/preview-policies", bad).await.expect(422);
    let again = s
        .admin
        .post("/preview-policies/show", json!({"scope": scope}))
        .await
        .ok();
    assert_eq!(again["policy"]["settings"], shown["policy"]["settings"]);

    let receipt = s.open("opened", 9, "feature", sha).await;
    let waiting = preview_of(&receipt)["previewEnvironmentId"]
        .as_str()
        .unwrap()
        .to_string();
    let reason = eventually(WAIT, "the second preview waiting", || async {
        let record = s
            .admin
            .get(&format!("/preview-environments/{waiting}"))
            .await
            .ok();
        let reason = record["previewEnvironment"]["ready"]["reason"]
            .as_str()?
            .to_string();
        (reason == "PreviewQuotaReached").then_some(record)
    })
    .await;
    let message = reason["previewEnvironment"]["ready"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("maxActivePreviews"), "{message}");
    assert!(docker_names(&format!("label=berth.dev/resource={waiting}")).is_empty());

    // Expired: pushed two hours ago with a one-hour time to live.
    let two_hours_ago =
        k8s_openapi::jiff::Timestamp::now() - k8s_openapi::jiff::SignedDuration::from_hours(2);
    let patch = json!({"spec": {"pushedAt": two_hours_ago.to_string()}});
    s.previews()
        .patch(&waiting, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("move the last push back");
    assert_cleaned(s, &waiting).await;
    let relaxed = json!({"scope": scope, "policy": {}});
    s.admin.post("/preview-policies", relaxed).await.ok();
}

/// The running container of resource `id`.
fn running_container(id: &str) -> String {
    let filter = format!("label=berth.dev/resource={id}");
    let names = docker(&[
        "ps",
        "--filter",
        &filter,
        "--filter",
        "status=running",
        "--format",
        "{{.Names}}",
    ]);
    names
        .lines()
        .next()
        .unwrap_or_else(|| panic!("a running container of {id}"))
        .to_string()
}

fn docker(args: &[&str]) -> String {
    let output = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI");
    String::from_utf8_lossy(&output.stdout).to_string()
}

/// Whether `from`'s container gets an answer from `address` on port 8080 within 3 s (the
/// image's wget crashes with its own `-T`).
fn reaches(from: &str, address: &str) -> bool {
    let url = format!("http://{address}:8080/");
    std::process::Command::new("docker")
        .args([
            "exec",
            from,
            "timeout",
            "3",
            "wget",
            "-q",
            "-O",
            "/dev/null",
            &url,
        ])
        .status()
        .expect("docker exec")
        .success()
}

/// `preview`'s container reaches itself but none of `others`' containers (by any address).
fn assert_isolated(preview: &str, others: &[&str]) {
    let from = running_container(preview);
    assert!(
        reaches(&from, "127.0.0.1"),
        "{from} answers itself (the probe works)"
    );
    for other in others {
        let target = running_container(other);
        let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}";
        for address in docker(&["inspect", "-f", format, &target]).split_whitespace() {
            assert!(
                !reaches(&from, address),
                "{from} reached {target} at {address}"
            );
        }
    }
}

async fn attempts_of(s: &Setup, id: &str) -> usize {
    let attempts =
        Api::<berth_crds::deployment::Deployment>::namespaced(s.client.clone(), &s.namespace);
    let params = ListParams::default().labels(&format!("{PREVIEW_LABEL}={id}"));
    attempts.list(&params).await.unwrap().items.len()
}

/// Within a minute: no object, container or route of preview `id` is left.
async fn assert_cleaned(s: &Setup, id: &str) {
    let labelled = format!("{PREVIEW_LABEL}={id}");
    let client = s.client.clone();
    let namespace = s.namespace.clone();
    eventually_explained(CLEANED_WITHIN, &format!("preview {id} cleaned"), || {
        let (client, namespace, labelled) = (client.clone(), namespace.clone(), labelled.clone());
        async move {
            let params = ListParams::default().labels(&labelled);
            let objects = [
                names::<berth_crds::resource::Resource>(&client, &namespace, &params).await,
                names::<berth_crds::environment::Environment>(&client, &namespace, &params).await,
                names::<berth_crds::deployment::Deployment>(&client, &namespace, &params).await,
                names::<k8s_openapi::api::core::v1::Secret>(&client, &namespace, &params).await,
            ]
            .concat();
            let preview = Api::<PreviewEnvironment>::namespaced(client, &namespace)
                .get_opt(id)
                .await
                .map_err(|error| error.to_string())?;
            let on_server = format!("label={labelled}");
            let left = [
                (
                    "preview",
                    preview.map(|p| p.name_any()).into_iter().collect(),
                ),
                ("objects", objects),
                (
                    "containers",
                    docker_names(&format!("label=berth.dev/resource={id}")),
                ),
                ("labelled containers", docker_names(&on_server)),
                ("networks", networks(&on_server)),
                ("volumes", volumes(&on_server)),
            ];
            let left: Vec<_> = left.iter().filter(|(_, names)| !names.is_empty()).collect();
            match left.is_empty() {
                true => Ok(()),
                false => Err(format!("left: {left:?}")),
            }
        }
    })
    .await;
    let built = docker_lines(&["images", "-q", &format!("berth-built/{}/{id}", s.namespace)]);
    assert!(built.is_empty(), "images built for {id} left: {built:?}");
    let check = leftovers(s).await;
    let of_it: Vec<_> = check["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["previewEnvironmentId"] == id)
        .collect();
    assert!(of_it.is_empty(), "the leftovers check lists {of_it:?}");
    assert_eq!(
        s.admin
            .get(&format!("/preview-environments/{id}"))
            .await
            .status,
        404
    );
    let number: u64 = id.rsplit('-').next().unwrap().parse().unwrap();
    let http = reqwest::Client::new();
    eventually(
        CLEANED_WITHIN,
        "the preview's host no longer routed",
        || async {
            let (status, _) = fetch(&http, s.port, &s.host(number)).await?;
            (status == 404).then_some(())
        },
    )
    .await;
}

/// `GET /preview-environments/leftovers`, which must have read every server.
async fn leftovers(s: &Setup) -> Value {
    let check = s.admin.get("/preview-environments/leftovers").await.ok();
    assert_eq!(check["uncheckedServers"], json!([]), "{check}");
    check
}

/// What the leftovers check says of a thing left by hand with a closed preview's label, on the
/// server and in the cluster; removed again.
async fn leftovers_listed(s: &Setup, server: &str, gone: &str) {
    let network = format!("left-{gone}");
    let labels = [
        format!("{PREVIEW_LABEL}={gone}"),
        format!("berth.dev/namespace={}", s.namespace),
    ];
    let made = std::process::Command::new("docker")
        .args([
            "network", "create", "--label", &labels[0], "--label", &labels[1], &network,
        ])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let environments =
        Api::<berth_crds::environment::Environment>::namespaced(s.client.clone(), &s.namespace);
    let mut environment = environment_object(&s.namespace, &network, &s.project);
    environment["metadata"]["labels"] = json!({PREVIEW_LABEL: gone});
    let environment = serde_json::from_value(environment).unwrap();
    environments
        .create(&Default::default(), &environment)
        .await
        .unwrap();

    let check = leftovers(s).await;
    assert!(
        check["checkedServers"]
            .as_array()
            .unwrap()
            .contains(&json!(server)),
        "{check}"
    );
    let listed = |kind: &str, name: &str, server: Option<&str>| {
        check["items"].as_array().unwrap().iter().any(|item| {
            item["previewEnvironmentId"] == gone
                && item["kind"] == kind
                && item["name"] == name
                && item.get("serverId").and_then(Value::as_str) == server
        })
    };
    assert!(listed("network", &network, Some(server)), "{check}");
    assert!(listed("Environment", &network, None), "{check}");

    docker_lines(&["network", "rm", &network]);
    environments
        .delete(&network, &Default::default())
        .await
        .unwrap();
}

async fn names<K>(client: &kube::Client, namespace: &str, params: &ListParams) -> Vec<String>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = Api::<K>::namespaced(client.clone(), namespace);
    let listed = api.list(params).await.map(|l| l.items).unwrap_or_default();
    listed
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                std::any::type_name::<K>(),
                o.meta().name.clone().unwrap_or_default()
            )
        })
        .collect()
}

/// A preview applied with kubectl for a resource that runs a prebuilt image: a pull request's
/// commit has nothing to deploy there, so the preview says why and makes nothing (no copy
/// whose image would be the pull request's repository).
#[tokio::test]
async fn a_preview_of_a_resource_not_built_from_git_says_so_and_makes_nothing() {
    use berth_crds::condition::{READY, find};
    let client = client().await;
    let ns = berth_tests::TestNamespace::new(&client, "pvimage").await;
    let repo = GitRepo::new("preview-image");
    repo.write("README", "nothing to build\n");
    let head = repo.commit("Head");
    let objects = [
        environment_object(&ns.name, "env-prod", "prj-demo"),
        json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "img", "namespace": ns.name},
            "spec": {"projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
                "name": "img", "kind": "application", "firstDeployment": "on-request",
                "source": {"kind": "docker-image", "locator": "berth/sample-app:1"}}}),
        preview_object(&ns.name, ("prj-demo", "img"), &repo, 4, ("feature", &head)),
    ];
    crate::deployments::apply(&object_list(&objects));
    let previews = ns.api::<PreviewEnvironment>();
    let ready = eventually(WAIT, "the preview says why it has no copy", || async {
        let preview = previews.get_opt("img-pr-4").await.ok()??;
        let ready = find(&preview.status.as_ref()?.conditions, READY)?.clone();
        (ready.reason == berth_crds::preview::reason::SOURCE_NOT_GIT).then_some(ready)
    })
    .await;
    assert!(ready.message.contains("docker-image"), "{}", ready.message);
    let resources = ns.api::<berth_crds::resource::Resource>();
    assert!(resources.get_opt("img-pr-4").await.unwrap().is_none());
    close(&ns.name, "img-pr-4");
    eventually(WAIT, "the preview gone", || async {
        previews
            .get_opt("img-pr-4")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
}
