//! A preview at a host name of its own over HTTPS (issue 44): a PreviewPolicy's domain template
//! gives a pull request's preview its own host name, served through a DomainBinding the preview
//! owns with a certificate from Pebble (the stack's ACME server); the preview says Ready only
//! once HTTPS serves it, its generated host is not routed, and closing the pull request takes the
//! binding, its certificate and its route away.
//!
//! Pebble checks HTTP-01 on the edge proxy's port 5002, so this test takes its turn with the
//! TLS tests (`PEBBLE_PORTS`).

use std::time::Duration;

use berth_crds::certificate::Certificate;
use berth_crds::condition::{ConditionStatus, READY, find};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::preview::PreviewEnvironment;
use berth_tests::{TestNamespace, client, eventually, random_suffix, stack_env};
use kube::api::ListParams;
use serde_json::json;

use crate::deploy_support::docker_names;
use crate::deployments::apply;
use crate::git_support::GitRepo;
use crate::previews::{DOCKERFILE, page};
use crate::previews::{close, environment_object, object_list, preview_object};
use crate::tls::{HTTP_PORT, HTTPS_PORT, PEBBLE_PORTS, curl, pebble_server, release_ports};

const WAIT: Duration = Duration::from_secs(180);
/// The promise: a closed pull request's preview is gone within a minute.
const CLEANED_WITHIN: Duration = Duration::from_secs(60);
const PREVIEW: &str = "web-pr-5";

/// The base environment, the resource `web` built from `repo` (never deployed itself: the
/// test is about its preview), the policy with the domain template, and pull request 5's
/// preview of `head`.
fn manifests(ns: &TestNamespace, repo: &GitRepo, template: &str, head: &str) -> String {
    let namespace = &ns.name;
    let objects = [
        environment_object(namespace, "env-prod", "prj-demo"),
        json!({"apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
                "name": "web", "kind": "application", "firstDeployment": "on-request",
                "source": {"kind": "git-public", "locator": repo.http_url(), "gitRef": "main"},
                "networkProfile": {"internalPort": 8080},
                "runtimeProfile": {"healthCheck": {"path": "/", "intervalSeconds": 1, "retries": 2}}}}),
        json!({"apiVersion": "berth.dev/v1alpha1", "kind": "PreviewPolicy",
            "metadata": {"name": "previews", "namespace": namespace},
            "spec": {"projectId": "prj-demo", "resourceId": "web",
                "previewDomainTemplate": template}}),
        preview_object(namespace, ("prj-demo", "web"), repo, 5, ("feature", head)),
    ];
    object_list(&objects)
}

#[tokio::test]
async fn a_domain_template_serves_the_preview_over_https_and_closing_it_takes_the_certificate() {
    let _ports = PEBBLE_PORTS.lock().await;
    let client = client().await;
    let ns = TestNamespace::new(&client, "pvtls").await;
    pebble_server(&ns).await;
    let repo = GitRepo::new("preview-tls");
    repo.write("Dockerfile", DOCKERFILE);
    repo.write("www/index.html", &page("main revision"));
    repo.commit("Main");
    repo.branch("feature");
    repo.write("www/index.html", &page("pull request over https"));
    let head = repo.commit("PR over HTTPS");
    let suffix = random_suffix();
    let template = format!("{{preview_id}}-{suffix}.berth.test");
    apply(&manifests(&ns, &repo, &template, &head));

    // Ready only once HTTPS serves it, at the template's host name.
    let hostname = format!("pr-5-{suffix}.berth.test");
    let url = format!("https://{hostname}:{HTTPS_PORT}/");
    let previews = ns.api::<PreviewEnvironment>();
    let preview = eventually(WAIT, "the preview Ready over HTTPS", || async {
        let preview = previews.get_opt(PREVIEW).await.ok()??;
        let ready = find(&preview.status.as_ref()?.conditions, READY)?;
        (ready.status == ConditionStatus::True).then_some(preview)
    })
    .await;
    assert_eq!(preview.status.unwrap().url.as_deref(), Some(url.as_str()));
    let root = stack_env("BERTH_ACME_ROOT_CA");
    let resolve = format!("{hostname}:{HTTPS_PORT}:127.0.0.1");
    let (body, error) = curl(&["--fail", "--cacert", &root, "--resolve", &resolve, &url]);
    assert!(
        body.contains("pull request over https"),
        "HTTPS answer: {body:?} {error}"
    );

    // The binding is the preview's, its certificate Pebble's; the generated host is not routed.
    let binding_name = format!("{PREVIEW}-domain");
    let binding = ns.api::<DomainBinding>().get(&binding_name).await.unwrap();
    assert_eq!(binding.spec.hostname, hostname);
    let certificate = binding
        .status
        .unwrap()
        .certificate_id
        .expect("a certificate");
    assert!(
        ns.api::<Certificate>()
            .get_opt(&certificate)
            .await
            .unwrap()
            .is_some()
    );
    let (code, _) = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-H",
        "Host: pr-5-web.localhost",
        &format!("http://127.0.0.1:{HTTP_PORT}/"),
    ]);
    assert_eq!(code, "404", "the generated host name is routed too");

    // Closed: within a minute the preview, its binding, certificate and containers are gone
    // and HTTPS no longer serves the host name.
    close(&ns.name, PREVIEW);
    let (bindings, certificates) = (ns.api::<DomainBinding>(), ns.api::<Certificate>());
    eventually(
        CLEANED_WITHIN,
        "the preview's binding and certificate gone",
        || {
            let (previews, bindings, certificates) =
                (previews.clone(), bindings.clone(), certificates.clone());
            let certificate = certificate.clone();
            async move {
                let left = previews.get_opt(PREVIEW).await.ok()?.is_some()
                    || !bindings
                        .list(&ListParams::default())
                        .await
                        .ok()?
                        .items
                        .is_empty()
                    || certificates.get_opt(&certificate).await.ok()?.is_some()
                    || !docker_names(&format!("label=berth.dev/resource={PREVIEW}")).is_empty();
                (!left).then_some(())
            }
        },
    )
    .await;
    eventually(CLEANED_WITHIN, "the host name no longer served", || async {
        let (body, _) = curl(&["--cacert", &root, "--resolve", &resolve, &url]);
        (!body.contains("pull request over https")).then_some(())
    })
    .await;

    release_ports(&ns).await;
}
