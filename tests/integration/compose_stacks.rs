//! Compose stacks (issue 30) from a repository of the stack's git server: a web service built
//! from its Dockerfile, an api it calls by name on the stack's own network, and a worker
//! writing into a named volume the web serves from; `depends_on` waits for the worker's health
//! check. A push that changes only the web redeploys it with no kept-alive request dropped
//! and keeps the other services' containers; one removed by hand comes back; a Compose file
//! asking for a published port is refused by the key's path while the stack keeps serving;
//! deletion removes every container of the stack and its network.

use std::time::Duration;

use berth_crds::deployment::{Deployment, DeploymentState};
use berth_crds::resource::Resource;
use berth_tests::{TestNamespace, client, eventually, kubectl};
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::deploy_support::wait_body;
use crate::git_support::{GitRepo, get};

const WAIT: Duration = Duration::from_secs(180);

const COMPOSE: &str = r#"services:
  web:
    build: ./web
    environment:
      GREETING: "${GREETING:-unset}"
    depends_on:
      worker: { condition: service_healthy }
      api: { condition: service_started }
    volumes: ["shared:/shared:ro"]
  api:
    image: berth/busybox:1
    command: ["/bin/sh", "-c", "mkdir -p /www && echo api-answers-by-name > /www/index.html && exec httpd -f -p 9000 -h /www"]
  worker:
    image: berth/busybox:1
    command: ["/bin/sh", "-c", "while true; do date +%s > /shared/heartbeat; sleep 1; done"]
    volumes: ["shared:/shared"]
    healthcheck:
      test: ["CMD", "test", "-f", "/shared/heartbeat"]
      interval: 1s
      retries: 30
volumes:
  shared:
"#;

/// The web drains on SIGTERM as Berth asks of an app (README, "Deploying"): its listener
/// closes at once, what it accepted is answered within a second.
const WEB_DOCKERFILE: &str = r#"FROM berth/busybox:1
COPY www/ /www/
RUN chmod +x /www/cgi-bin/* && ln -s /shared/heartbeat /www/heartbeat
EXPOSE 8080
CMD ["/bin/sh", "-c", "echo \"greeting $GREETING\" > /www/greeting.txt; httpd -f -p 8080 -h /www & pid=$!; trap 'kill $pid; sleep 1; exit 0' TERM; wait"]
"#;

/// A CGI of the web service asking the api service by its name.
const API_CGI: &str =
    "#!/bin/sh\necho 'Content-Type: text/plain'\necho\nwget -qO- http://api:9000/\n";

fn docker_id(container: &str) -> String {
    let output = std::process::Command::new("docker")
        .args(["inspect", "-f", "{{.Id}}", container])
        .output()
        .expect("docker CLI (tests only)");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// The stack network a service container is on.
fn stack_network_of(container: &str) -> String {
    let output = std::process::Command::new("docker")
        .args([
            "inspect",
            "-f",
            "{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}",
            container,
        ])
        .output()
        .expect("docker CLI (tests only)");
    let networks = String::from_utf8_lossy(&output.stdout).to_string();
    networks
        .split_whitespace()
        .find(|n| n.starts_with("berth-stack-"))
        .unwrap_or_default()
        .to_string()
}

fn docker(args: &[&str]) {
    let output = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI (tests only)");
    assert!(output.status.success(), "docker {args:?}: {output:?}");
}

async fn ended(ns: &TestNamespace, name: &str) -> Deployment {
    let api = ns.api::<Deployment>();
    eventually(WAIT, &format!("deployment {name} ended"), || {
        let api = api.clone();
        async move {
            let d = api.get_opt(name).await.ok()??;
            d.status.as_ref()?.status?.is_terminal().then_some(d)
        }
    })
    .await
}

/// Bumps the resource's generation (auto-deploy on): the next attempt fetches the branch's
/// newest commit. Returns its name.
async fn redeploy(ns: &TestNamespace, note: &str) -> String {
    let patch = json!({ "spec": { "description": note } });
    let patched = ns
        .api::<Resource>()
        .patch("stack", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch resource");
    format!("dep-stack-{}", patched.metadata.generation.unwrap())
}

#[tokio::test]
async fn a_compose_stack_runs_its_services_together_and_a_push_replaces_only_what_changed() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "compose").await;
    let port = crate::deployments::ready_server(&ns).await;
    let repo = GitRepo::new("stack");
    repo.write("compose.yaml", COMPOSE);
    repo.write("web/Dockerfile", WEB_DOCKERFILE);
    repo.write("web/www/index.html", "<h1>stack v1</h1>\n");
    repo.write("web/www/cgi-bin/api", API_CGI);
    repo.commit("A stack of three services");
    let manifest = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": "stack", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": "stack", "kind": "compose-stack",
            "source": { "kind": "git-public", "locator": repo.http_url(), "gitRef": "main" },
            "networkProfile": { "internalPort": 8080, "targetServiceName": "web" },
            "runtimeProfile": { "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 } },
            "autoDeploy": { "enabled": true },
            "variables": [{ "key": "GREETING", "value": "from-berth" }],
        },
    });
    let output = kubectl(&["apply", "-f", "-"], Some(&manifest.to_string()));
    assert!(output.status.success(), "kubectl apply: {output:?}");
    let first = ended(&ns, "dep-stack-1").await.status.unwrap();
    assert_eq!(
        first.status,
        Some(DeploymentState::Succeeded),
        "{:?}",
        first.last_error
    );
    let stack = first.stack.expect("the stack is recorded");
    assert_eq!(stack.routed_service, "web");
    let names: Vec<_> = stack.services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["worker", "api", "web"], "dependencies first");

    wait_body(port, "stack.localhost", "stack v1").await;
    // The web calls the api by its service name on the stack's network…
    assert_eq!(
        get(port, "stack.localhost", "/cgi-bin/api").await,
        (200, "api-answers-by-name\n".into())
    );
    // …reads what the worker writes into the shared volume…
    let (status, heartbeat) = get(port, "stack.localhost", "/heartbeat").await;
    assert!(
        status == 200 && heartbeat.trim().parse::<u64>().is_ok(),
        "{status} {heartbeat}"
    );
    // …and runs with Berth's variables, which the Compose file interpolates.
    let (_, greeting) = get(port, "stack.localhost", "/greeting.txt").await;
    assert_eq!(greeting.trim(), "greeting from-berth");

    // A push that changes only the web: it is redeployed without dropping a request, the
    // worker's and the api's containers stay.
    let worker = format!("berth-{}-stack-worker", ns.name);
    let api = format!("berth-{}-stack-api", ns.name);
    let (worker_id, api_id) = (docker_id(&worker), docker_id(&api));
    assert!(!worker_id.is_empty() && !api_id.is_empty());
    let load = crate::deploy_support::Load::start(port, "stack.localhost", 4);
    tokio::time::sleep(Duration::from_secs(1)).await;
    repo.write("web/www/index.html", "<h1>stack v2</h1>\n");
    repo.commit("Web v2");
    let second = redeploy(&ns, "web v2").await;
    let status = ended(&ns, &second).await.status.unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{:?}",
        status.last_error
    );
    wait_body(port, "stack.localhost", "stack v2").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (answered, failures) = load.finish().await;
    eprintln!("kept-alive clients through a stack redeploy: {answered} answered, {failures:?}");
    assert!(answered > 50, "{answered}");
    assert!(
        failures.is_empty(),
        "{failures:#?}\nthe edge proxies said: {:#?}",
        crate::deploy_support::edge_proxy_errors(120)
    );
    assert_eq!(
        docker_id(&worker),
        worker_id,
        "the unchanged worker was replaced"
    );
    assert_eq!(docker_id(&api), api_id, "the unchanged api was replaced");

    // A service removed by hand comes back.
    docker(&["rm", "-fv", &api]);
    eventually(WAIT, "the api service back", || async {
        let answer = get(port, "stack.localhost", "/cgi-bin/api").await;
        (answer.1 == "api-answers-by-name\n").then_some(())
    })
    .await;

    // What a Berth stack cannot do is refused by the key's path; v2 keeps serving.
    repo.write(
        "compose.yaml",
        &COMPOSE.replace(
            "    build: ./web\n",
            "    build: ./web\n    ports: [\"8080:8080\"]\n",
        ),
    );
    repo.commit("Publish a port");
    let refused = redeploy(&ns, "ports").await;
    let status = ended(&ns, &refused).await.status.unwrap();
    assert_eq!(status.status, Some(DeploymentState::Failed));
    let error = status.last_error.unwrap();
    assert_eq!(
        error.code.as_str(),
        "compose_file_invalid",
        "{}",
        error.message
    );
    assert!(
        error.message.contains("services.web.ports"),
        "{}",
        error.message
    );
    assert_eq!(get(port, "stack.localhost", "/").await.0, 200);

    // Deleting the resource removes every container of the stack and its network.
    let stack_network = stack_network_of(&worker);
    assert!(stack_network.starts_with("berth-stack-"), "{stack_network}");
    crate::deployments::teardown(&ns, "stack").await;
    assert!(docker_id(&worker).is_empty() && docker_id(&api).is_empty());
    let networks = std::process::Command::new("docker")
        .args(["network", "ls", "--format", "{{.Name}}"])
        .output()
        .unwrap();
    let networks = String::from_utf8_lossy(&networks.stdout).to_string();
    assert!(!networks.lines().any(|n| n == stack_network), "{networks}");
}
