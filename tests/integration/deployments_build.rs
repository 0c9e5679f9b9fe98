//! Deployments that build their image (issue: sources): a local folder built from its Dockerfile
//! through Docker's build API over the SSH tunnel, with a build arg and a `.dockerignore`; old
//! built images pruned to the newest three; a broken Dockerfile failing the package phase while
//! the previous version keeps serving; and a static site served by the edge proxy's Caddy.
//! Every Resource is applied with kubectl and reached through the edge proxy.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use berth_crds::deployment::{Deployment, DeploymentPhase, DeploymentState};
use berth_crds::resource::Resource;
use berth_tests::{TestNamespace, client, eventually, kubectl, random_suffix};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::deployments::{ready_server, wait_ended};

/// Long enough for a build, health check and switch on two busy cores.
const WAIT: Duration = Duration::from_secs(150);

/// A folder of the test's own, removed when dropped. The controller runs on this machine and
/// reads `local-folder` sources from its own filesystem.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new() -> Self {
        let path = std::env::temp_dir().join(format!("berth-build-{}", random_suffix()));
        std::fs::create_dir_all(&path).expect("create the scratch folder");
        Self(path)
    }

    pub(crate) fn write(&self, relative: &str, content: &str) {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        std::fs::write(path, content).expect("write a source file");
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn apply(manifest: &Value) {
    let output = kubectl(&["apply", "-f", "-"], Some(&manifest.to_string()));
    assert!(output.status.success(), "kubectl apply: {output:?}");
}

/// GET `path` for `host` through the proxy: (status, body).
async fn fetch(port: u16, host: &str, path: &str) -> Option<(u16, String)> {
    let response = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}{path}"))
        .header("Host", host)
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.text().await.ok()?))
}

async fn wait_body(port: u16, host: &str, needle: &str) -> String {
    eventually(WAIT, &format!("{host} serving {needle}"), || async move {
        fetch(port, host, "/")
            .await
            .filter(|(status, body)| *status == 200 && body.contains(needle))
            .map(|(_, body)| body)
    })
    .await
}

/// Waits for Deployment `name` to succeed; returns it and how long it ran.
async fn wait_succeeded(ns: &TestNamespace, name: &str) -> (Deployment, Duration) {
    let deployment = wait_ended(ns, name).await;
    let status = deployment.status.clone().unwrap();
    assert_eq!(
        status.status,
        Some(DeploymentState::Succeeded),
        "{name}: {:?}",
        status.last_error
    );
    let took = match (&status.started_at, &status.finished_at) {
        (Some(start), Some(end)) => end.0.duration_since(start.0).unsigned_abs(),
        _ => Duration::ZERO,
    };
    (deployment, took)
}

/// Changes the resource's description (a new generation, so auto-deploy starts an attempt) and
/// returns the name of that attempt.
async fn redeploy(ns: &TestNamespace, name: &str, note: &str) -> String {
    let patch = json!({ "spec": { "description": note } });
    let patched = ns
        .api::<Resource>()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch resource");
    format!("dep-{name}-{}", patched.metadata.generation.unwrap())
}

/// Deletes the resource and waits until its containers and built images are gone.
async fn teardown(ns: &TestNamespace, name: &str) {
    crate::deployments::teardown(ns, name).await;
    eventually(WAIT, "built images removed", || async {
        crate::deploy_support::built_images(&ns.name, name)
            .is_empty()
            .then_some(())
    })
    .await;
}

/// A busybox web app whose page gets the `GREETING` build arg written into it at build time.
const APP_DOCKERFILE: &str = r#"FROM berth/busybox:1
ARG GREETING=unset
COPY www/ /www/
RUN echo "<p>greeting: ${GREETING}</p>" >> /www/index.html
EXPOSE 8080
CMD ["/bin/sh", "-c", "httpd -f -p 8080 -h /www & trap 'exit 0' TERM; wait"]
"#;

#[tokio::test]
async fn a_local_folder_is_built_from_its_dockerfile_old_images_are_pruned_and_a_broken_build_keeps_the_old_version()
 {
    let client = client().await;
    let ns = TestNamespace::new(&client, "build-app").await;
    let port = ready_server(&ns).await;
    let folder = Scratch::new();
    folder.write("app/Dockerfile", APP_DOCKERFILE);
    folder.write("app/.dockerignore", "www/ignored.txt\n");
    folder.write("app/www/index.html", "<h1>revision 1</h1>\n");
    folder.write("app/www/ignored.txt", "must not be uploaded\n");
    folder.write("elsewhere.txt", "outside the base directory\n");
    let greeting = format!("hello-build-{}", random_suffix());
    apply(&json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": { "name": "app", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": "app", "kind": "application",
            "source": {
                "kind": "local-folder",
                "locator": folder.path().to_str().unwrap(),
                "baseDirectory": "app",
            },
            "runtimeProfile": { "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 } },
            "networkProfile": { "internalPort": 8080 },
            "autoDeploy": { "enabled": true },
            "variables": [{ "key": "GREETING", "value": greeting, "exposure": "build-time" }],
        },
    }));

    let (first, took) = wait_succeeded(&ns, "dep-app-1").await;
    eprintln!("first build deployment: {took:?}");
    let image = format!("berth-built/{}/app:dep-app-1", ns.name);
    assert_eq!(first.status.unwrap().image_ref.as_deref(), Some(&*image));
    let body = wait_body(port, "app.localhost", "revision 1").await;
    assert!(body.contains(&format!("greeting: {greeting}")), "{body}");
    let (code, _) = fetch(port, "app.localhost", "/ignored.txt").await.unwrap();
    assert_eq!(code, 404, ".dockerignore'd file was uploaded");
    let output = std::process::Command::new("docker")
        .args(["image", "inspect", &image])
        .output()
        .unwrap();
    let inspected: Value = serde_json::from_slice(&output.stdout).unwrap();
    // Berth added no instruction of its own (a label is a build step of its own): the image
    // holds only what its Dockerfile says.
    let labels = inspected[0]["Config"]["Labels"].to_string();
    assert!(!labels.contains("berth.dev/"), "{labels}");

    // Four more builds: only the newest three images stay, the serving one among them.
    let mut last = String::new();
    for revision in 2..=5 {
        folder.write(
            "app/www/index.html",
            &format!("<h1>revision {revision}</h1>\n"),
        );
        last = redeploy(&ns, "app", &format!("revision {revision}")).await;
        let (_, took) = wait_succeeded(&ns, &last).await;
        eprintln!("rebuild {revision} ({last}): {took:?}");
        wait_body(port, "app.localhost", &format!("revision {revision}")).await;
    }
    let images = crate::deploy_support::built_images(&ns.name, "app");
    assert!(images.len() <= 3, "{images:?}");
    let serving = format!("berth-built/{}/app:{last}", ns.name);
    assert!(images.contains(&serving), "{images:?}");

    // A failing Dockerfile step fails the package phase; version 5 keeps serving.
    folder.write(
        "app/Dockerfile",
        &APP_DOCKERFILE.replace(
            "EXPOSE 8080",
            "RUN echo \"value is ${GREETING}\" && false\nEXPOSE 8080",
        ),
    );
    let broken = redeploy(&ns, "app", "broken").await;
    let status = wait_ended(&ns, &broken).await.status.unwrap();
    assert_eq!(status.status, Some(DeploymentState::Failed), "{status:?}");
    let error = status.last_error.expect("lastError");
    assert_eq!(error.phase, DeploymentPhase::Package);
    assert_eq!(error.code, "build_failed");
    assert!(error.message.contains("non-zero code"), "{}", error.message);
    // Build args never show: the output line with the value is quoted masked.
    assert!(error.message.contains("value is ****"), "{}", error.message);
    assert!(!error.message.contains(&greeting), "{}", error.message);
    let (code, body) = fetch(port, "app.localhost", "/").await.unwrap();
    assert_eq!(code, 200);
    assert!(body.contains("revision 5"), "{body}");
    teardown(&ns, "app").await;
}

#[tokio::test]
async fn a_static_site_folder_is_served_through_the_edge_proxy() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "build-site").await;
    let port = ready_server(&ns).await;
    let folder = Scratch::new();
    let marker = format!("static-marker-{}", random_suffix());
    folder.write("site/public/index.html", &format!("<h1>{marker}</h1>\n"));
    folder.write("site/public/css/site.css", "h1 { color: teal }\n");
    // Same name as the generated Dockerfile: left out, never served.
    folder.write("site/public/.berth.Dockerfile", "FROM nothing\n");
    folder.write("site/README.md", "outside the publish directory\n");
    let started = Instant::now();
    apply(&json!({
        "apiVersion": "berth.dev/v1alpha1",
        "kind": "Resource",
        "metadata": { "name": "site", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": "site", "kind": "static-site",
            "source": {
                "kind": "local-folder",
                "locator": folder.path().to_str().unwrap(),
                "baseDirectory": "site",
            },
            "runtimeProfile": {
                "publishDirectory": "public",
                "healthCheck": { "path": "/", "intervalSeconds": 1, "retries": 2 },
            },
        },
    }));
    let (deployment, took) = wait_succeeded(&ns, "dep-site-1").await;
    eprintln!("static site deployment: {took:?}");
    let image = format!("berth-built/{}/site:dep-site-1", ns.name);
    assert_eq!(
        deployment.status.unwrap().image_ref.as_deref(),
        Some(&*image)
    );
    wait_body(port, "site.localhost", &marker).await;
    eprintln!(
        "static site: apply → first 200 through the proxy: {:?}",
        started.elapsed()
    );
    let (code, css) = fetch(port, "site.localhost", "/css/site.css")
        .await
        .unwrap();
    assert_eq!((code, css.as_str()), (200, "h1 { color: teal }\n"));
    for hidden in ["/.berth.Dockerfile", "/.dockerignore", "/README.md"] {
        let (code, _) = fetch(port, "site.localhost", hidden).await.unwrap();
        assert_eq!(code, 404, "{hidden} is served");
    }
    let status = ns.api::<Resource>().get("site").await.unwrap().status;
    let planned = status
        .and_then(|s| s.access_summary)
        .and_then(|a| a.planned_generated_access_route)
        .expect("planned route");
    assert_eq!(planned.target_port, 8080);
    teardown(&ns, "site").await;
}
