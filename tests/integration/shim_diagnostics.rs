//! `GET /resources/{resourceId}/diagnostic-summary` (spec §4.7,
//! `resources.diagnostic-summary/v1`) against the running shim, controller and a real server:
//! after a deployment whose build fails, the summary names the failed phase, code and message,
//! holds the tail of its timeline and of the still-serving container's output, shows the route
//! as the edge proxy holds it, and none of it — nor its copy texts — holds the secret value.

use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::TestOrg;
use berth_tests::{client, random_suffix};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::deploy_support::{
    assert_never_shown, delete_resource, ready_server, remove_server, wait_listed_with,
};
use crate::deployments_build::Scratch;
use crate::shim_projects_envs::{environment, invalid, project};

/// The sample app, printing its secret token at start.
const DOCKERFILE: &str = r#"FROM berth/sample-app:1
CMD ["/bin/sh", "-c", "echo \"api token is $API_TOKEN\"; echo 'serving'; exec /bin/sample-app"]
"#;
/// A build step that fails.
const BROKEN: &str = "FROM berth/sample-app:1\nRUN echo 'compiling assets' && false\n";

fn texts(values: &[&Value]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .filter_map(|line| line["message"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_failed_build_is_summarised_with_its_phase_code_tails_and_route_and_no_secret() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let member = org.user(OrganizationRole::Member).await.rest;
    let (server, _port) = ready_server(&admin).await;
    let shop = project(&member, "Shop").await;
    let prod = environment(&member, &shop, "prod").await;
    let slug = format!("diag{}", random_suffix());
    let folder = Scratch::new();
    folder.write("Dockerfile", DOCKERFILE);
    let created = member
        .post(
            "/resources",
            json!({
                "projectId": shop, "environmentId": prod, "name": "Diagnosed", "slug": slug,
                "kind": "application",
                "source": {"kind": "local-folder", "locator": folder.path().to_str().unwrap()},
                "networkProfile": {"internalPort": 8080},
            }),
        )
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let secret = format!("tok-{}{}", random_suffix(), random_suffix());
    member
        .post(
            &format!("/resources/{id}/secrets"),
            json!({"key": "API_TOKEN", "value": secret}),
        )
        .await
        .ok();
    let resources = Api::<Resource>::namespaced(client.clone(), &org.namespace);
    let place = json!({ "spec": { "serverId": server } });
    resources
        .patch(&id, &PatchParams::default(), &Patch::Merge(&place))
        .await
        .expect("set the resource's server");
    wait_listed_with(&member, &id, "succeeded").await;

    // The next build fails; the first version keeps serving.
    folder.write("Dockerfile", BROKEN);
    // A spec change deploys again once auto-deploy is on.
    let bump =
        json!({ "spec": { "description": "broken build", "autoDeploy": { "enabled": true } } });
    let patched = resources
        .patch(&id, &PatchParams::default(), &Patch::Merge(&bump))
        .await
        .expect("start another deployment");
    let failed = format!("dep-{id}-{}", patched.metadata.generation.unwrap());
    wait_listed_with(&member, &id, "failed").await;

    let base = format!("/resources/{id}/diagnostic-summary");
    let summary = member
        .get(&format!(
            "{base}?deploymentId={failed}&includeProxyConfiguration=true&tailLines=50"
        ))
        .await
        .ok();
    assert_eq!(summary["schemaVersion"], "resources.diagnostic-summary/v1");
    assert_eq!(summary["focus"]["deploymentId"], failed.as_str());
    assert_eq!(summary["context"]["resourceSlug"], slug.as_str());
    assert_eq!(summary["context"]["serverId"], server.as_str());
    let deployment = &summary["deployment"];
    assert_eq!(deployment["status"], "failed", "{deployment}");
    let error = &deployment["lastError"];
    assert_eq!(error["phase"], "package", "{error}");
    assert_eq!(error["code"], "build_failed", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("non-zero code"),
        "{error}"
    );
    assert!(deployment["timelineCount"].as_i64().unwrap() > 0);

    let timeline = &summary["deploymentTimeline"];
    assert_eq!(timeline["status"], "available", "{timeline}");
    // Diagnostic log lines: each says whether a secret was masked in it.
    assert!(
        timeline["lines"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["masked"].is_boolean() && l["phase"].is_string()),
        "{timeline}"
    );
    assert_eq!(timeline["tailLimit"], 50);
    let timeline_text = texts(&[&timeline["lines"]]).join("\n");
    assert!(
        timeline_text.contains("compiling assets"),
        "{timeline_text}"
    );
    // The failed attempt has no container: the tail is of the one still serving.
    let logs = &summary["runtimeLogs"];
    assert_eq!(logs["status"], "available", "{logs}");
    assert!(
        logs["lines"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["masked"] == true && l["source"] == "application"),
        "{logs}"
    );
    let log_text = texts(&[&logs["lines"]]);
    assert!(
        log_text.iter().any(|l| l == "api token is ****"),
        "{log_text:?}"
    );
    assert_eq!(summary["redaction"]["masked"], true);
    assert!(summary["redaction"]["maskedValueCount"].as_u64().unwrap() >= 1);

    let proxy = &summary["proxy"];
    assert_eq!(proxy["configurationStatus"], "applied", "{proxy}");
    assert_eq!(proxy["proxyRouteStatus"], "ready", "{proxy}");
    let selected = &summary["access"]["selectedRoute"];
    assert_eq!(
        selected["schemaVersion"], "route-intent-status/v1",
        "{selected}"
    );
    assert_eq!(selected, &summary["access"]["routeIntentStatuses"][0]);
    let sections = proxy["sections"].as_array().unwrap();
    let formats: Vec<&str> = sections
        .iter()
        .filter_map(|s| s["format"].as_str())
        .collect();
    assert_eq!(formats, ["json", "docker-labels"]);
    assert!(
        sections[0]["content"]
            .as_str()
            .unwrap()
            .contains(&format!("{slug}.")),
        "{proxy}"
    );

    let copy = &summary["copy"];
    let markdown = copy["markdown"].as_str().unwrap();
    assert!(markdown.contains("build_failed"), "{markdown}");
    assert!(markdown.contains("package"), "{markdown}");
    assert!(markdown.contains("api token is ****"), "{markdown}");
    let plain = copy["plainText"].as_str().unwrap();
    assert!(plain.contains("build_failed"), "{plain}");
    let json: Value = serde_json::from_str(copy["json"].as_str().unwrap()).unwrap();
    assert_eq!(json["focus"]["deploymentId"], failed.as_str());
    assert_never_shown(&secret, &[]);

    // Without tails, and the latest deployment by default.
    let bare = member
        .get(&format!(
            "{base}?includeDeploymentTimelineTail=false&includeRuntimeLogTail=false"
        ))
        .await
        .ok();
    assert_eq!(bare["focus"]["deploymentId"], failed.as_str());
    assert_eq!(bare["deploymentTimeline"]["status"], "not-requested");
    assert_eq!(bare["runtimeLogs"]["lines"], json!([]));
    assert_eq!(bare["proxy"]["configurationIncluded"], false);

    invalid(
        member.get(&format!("{base}?tailLines=51")).await,
        "tailLines",
    );
    invalid(
        member
            .get(&format!(
                "{base}?observationFrom=2030-01-01T00:00:00%2B01:00"
            ))
            .await,
        "observationFrom",
    );
    member
        .get(&format!("{base}?deploymentId=dep-nope-1"))
        .await
        .error(404, "not_found");

    delete_resource(&admin, &id, &slug).await;
    remove_server(&admin, &server).await;
}
