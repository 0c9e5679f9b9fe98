//! A pull request that adds a Compose service gets it in its preview (issue 44): the preview
//! deploys the head commit's Compose file, not main's, so the new service runs beside the
//! others and the web reaches it by name; production's stack is untouched and closing the pull
//! request takes every container, network and volume of the preview's stack away.

use std::time::Duration;

use berth_crds::condition::{ConditionStatus, READY, find};
use berth_crds::deployment::Deployment;
use berth_crds::preview::{PREVIEW_LABEL, PreviewEnvironment, preview_attempt_name};
use berth_tests::{TestNamespace, client, eventually};
use serde_json::json;

use crate::deploy_support::{docker_names, networks, volumes, wait_body};
use crate::deployments::apply;
use crate::git_support::{GitRepo, get};
use crate::previews::{close, environment_object, object_list, preview_object};

const WAIT: Duration = Duration::from_secs(240);
const PREVIEW: &str = "stack-pr-2";

const MAIN_COMPOSE: &str = r#"services:
  web:
    build: ./web
  api:
    image: berth/busybox:1
    command: ["/bin/sh", "-c", "mkdir -p /www && echo api-answers > /www/index.html && exec httpd -f -p 9000 -h /www"]
"#;

/// The service the pull request adds to main's Compose file, keeping its page on a volume of
/// its own (a resource keeps its Compose volumes; a preview's go with it).
const CACHE_SERVICE: &str = r#"  cache:
    image: berth/busybox:1
    command: ["/bin/sh", "-c", "echo cache-answers-by-name > /www/index.html && exec httpd -f -p 9100 -h /www"]
    volumes:
      - cachepages:/www
volumes:
  cachepages: {}
"#;

const WEB_DOCKERFILE: &str = r#"FROM berth/busybox:1
COPY www/ /www/
RUN chmod +x /www/cgi-bin/*
EXPOSE 8080
CMD ["/bin/sh", "-c", "httpd -f -p 8080 -h /www & pid=$!; trap 'kill $pid; sleep 1; exit 0' TERM; wait"]
"#;

/// A CGI of the web asking the pull request's new service by its name.
const CACHE_CGI: &str =
    "#!/bin/sh\necho 'Content-Type: text/plain'\necho\nwget -qO- http://cache:9100/\n";

fn manifests(ns: &TestNamespace, repo: &GitRepo, head: &str) -> String {
    let namespace = &ns.name;
    let objects = [
        environment_object(namespace, "env-prod", "prj-demo"),
        json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "stack", "namespace": namespace},
            "spec": {"projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
                "name": "stack", "kind": "compose-stack",
                "source": {"kind": "git-public", "locator": repo.http_url(), "gitRef": "main"},
                "networkProfile": {"internalPort": 8080, "targetServiceName": "web"},
                "runtimeProfile": {"healthCheck": {"path": "/", "intervalSeconds": 1, "retries": 2}}}}),
        preview_object(
            namespace,
            ("prj-demo", "stack"),
            repo,
            2,
            ("add-cache", head),
        ),
    ];
    object_list(&objects)
}

/// The containers of resource `resource` of this test's namespace.
fn containers(ns: &TestNamespace, resource: &str) -> Vec<String> {
    let prefix = format!("berth-{}-", ns.name);
    let labelled = docker_names(&format!("label=berth.dev/resource={resource}"));
    let mut names: Vec<String> = labelled
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_pull_request_that_adds_a_compose_service_gets_it_in_its_preview() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "pvcompose").await;
    let port = crate::deployments::ready_server(&ns).await;
    let repo = GitRepo::new("preview-compose");
    repo.write("compose.yaml", MAIN_COMPOSE);
    repo.write("web/Dockerfile", WEB_DOCKERFILE);
    repo.write("web/www/index.html", "<h1>main stack</h1>\n");
    repo.write("web/www/cgi-bin/cache", CACHE_CGI);
    repo.commit("Web and api");
    repo.branch("add-cache");
    repo.write("compose.yaml", &format!("{MAIN_COMPOSE}{CACHE_SERVICE}"));
    repo.write("web/www/index.html", "<h1>stack with a cache</h1>\n");
    let head = repo.commit("Add a cache service");
    apply(&manifests(&ns, &repo, &head));

    // Production serves main's stack: two services.
    wait_body(port, "stack.localhost", "main stack").await;
    let production = containers(&ns, "stack");
    assert_eq!(production.len(), 2, "{production:?}");

    let previews = ns.api::<PreviewEnvironment>();
    eventually(WAIT, "the preview Ready", || async {
        let preview = previews.get_opt(PREVIEW).await.ok()??;
        let ready = find(&preview.status.as_ref()?.conditions, READY)?;
        (ready.status == ConditionStatus::True).then_some(())
    })
    .await;
    let attempt = ns
        .api::<Deployment>()
        .get(&preview_attempt_name(PREVIEW, &head))
        .await
        .unwrap();
    let stack = attempt
        .status
        .unwrap()
        .stack
        .expect("the stack is recorded");
    let mut services: Vec<_> = stack.services.iter().map(|s| s.name.clone()).collect();
    services.sort();
    assert_eq!(services, ["api", "cache", "web"], "the head's Compose file");

    // The preview's web reaches the new service by name; production has none.
    let host = "pr-2-stack.localhost";
    wait_body(port, host, "stack with a cache").await;
    assert_eq!(
        get(port, host, "/cgi-bin/cache").await,
        (200, "cache-answers-by-name\n".into())
    );
    let (_, answer) = get(port, "stack.localhost", "/cgi-bin/cache").await;
    assert!(
        !answer.contains("cache-answers"),
        "production's web has no cache to reach: {answer:?}"
    );
    assert_eq!(containers(&ns, "stack"), production);

    // Its volume and networks carry the preview's label, as its containers do.
    let labelled = format!("label={PREVIEW_LABEL}={PREVIEW}");
    assert_eq!(docker_names(&labelled).len(), 3, "web, api and cache");
    assert_eq!(volumes(&labelled).len(), 1, "the cache's volume");
    assert!(!networks(&labelled).is_empty(), "the preview's networks");

    // Closed: every container, volume and network of the preview's stack goes, production's
    // stay.
    close(&ns.name, PREVIEW);
    eventually(WAIT, "the preview's stack gone", || async {
        (containers(&ns, PREVIEW).is_empty()
            && docker_names(&labelled).is_empty()
            && volumes(&labelled).is_empty()
            && networks(&labelled).is_empty())
        .then_some(())
    })
    .await;
    assert_eq!(containers(&ns, "stack"), production);
    crate::deployments::teardown(&ns, "stack").await;
}
