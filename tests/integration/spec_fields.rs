//! No field accepted and ignored (issue 30): every field of the Resource spec either takes
//! effect (and a test shows it) or is refused by name where Berth cannot honour it. The walk
//! reads the field list from the generated CRD, so a field added later without a verdict here
//! fails this test. Each refusal is tried twice: over REST (a 422 naming the field, nothing
//! created) and with kubectl (`Ready=False InvalidSpec` naming it, no attempt started).

use std::collections::BTreeSet;
use std::time::Duration;

use berth_crds::condition::READY;
use berth_crds::deployment::Deployment;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_tests::rest::TestOrg;
use berth_tests::{TestNamespace, client, eventually, kubectl, repo_root};
use serde_json::{Value, json};

use crate::shim_projects_envs::{environment, project};

/// Fields whose effect a test shows, and the test.
const EFFECTS: &[(&str, &str)] = &[
    (
        "projectId",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "environmentId",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "serverId",
        "second_server_in_its_own_network_namespace_shares_the_credential",
    ),
    (
        "destinationId",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "name",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "slug",
        "stream_reports_each_step_and_success_and_the_new_version_serves",
    ),
    (
        "kind",
        "a_static_site_folder_is_served_through_the_edge_proxy",
    ),
    (
        "description",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "services",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "source.kind",
        "a_private_repository_is_read_with_a_deploy_key_and_a_wrong_key_or_pin_is_named",
    ),
    (
        "source.locator",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "source.displayName",
        "a_failed_build_is_summarised_with_its_phase_code_tails_and_route_and_no_secret",
    ),
    (
        "source.baseDirectory",
        "a_commands_only_repository_and_static_sites_build_from_their_repositories",
    ),
    (
        "source.gitRef",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "source.commitSha",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "source.metadata",
        "a_private_repository_is_read_with_a_deploy_key_and_a_wrong_key_or_pin_is_named",
    ),
    (
        "runtimeProfile.strategy",
        "a_commands_only_repository_and_static_sites_build_from_their_repositories",
    ),
    (
        "runtimeProfile.installCommand",
        "a_commands_only_repository_and_static_sites_build_from_their_repositories",
    ),
    (
        "runtimeProfile.buildCommand",
        "a_commands_only_repository_and_static_sites_build_from_their_repositories",
    ),
    (
        "runtimeProfile.startCommand",
        "a_start_command_replaces_the_image_command",
    ),
    (
        "runtimeProfile.publishDirectory",
        "a_commands_only_repository_and_static_sites_build_from_their_repositories",
    ),
    (
        "runtimeProfile.baseImage",
        "a_commands_only_repository_and_static_sites_build_from_their_repositories",
    ),
    (
        "runtimeProfile.dockerfilePath",
        "a_local_folder_is_built_from_its_dockerfile_old_images_are_pruned_and_a_broken_build_keeps_the_old_version",
    ),
    (
        "runtimeProfile.buildTarget",
        "a_local_folder_is_built_from_its_dockerfile_old_images_are_pruned_and_a_broken_build_keeps_the_old_version",
    ),
    (
        "runtimeProfile.dockerComposeFilePath",
        "a_compose_stack_runs_its_services_together_and_a_push_replaces_only_what_changed",
    ),
    (
        "runtimeProfile.healthCheck",
        "failing_health_check_keeps_the_old_version_serving",
    ),
    (
        "runtimeProfile.restartPolicy",
        "a_crash_docker_restarts_by_itself_leaves_its_evidence",
    ),
    (
        "networkProfile.internalPort",
        "kubectl_apply_serves_the_sample_app_through_the_edge_proxy_and_delete_cleans_up",
    ),
    (
        "networkProfile.upstreamProtocol",
        "direct_port_publishes_on_the_server_and_none_exposes_nothing",
    ),
    (
        "networkProfile.exposureMode",
        "direct_port_publishes_on_the_server_and_none_exposes_nothing",
    ),
    (
        "networkProfile.targetServiceName",
        "a_compose_stack_runs_its_services_together_and_a_push_replaces_only_what_changed",
    ),
    (
        "networkProfile.hostPort",
        "direct_port_publishes_on_the_server_and_none_exposes_nothing",
    ),
    (
        "accessProfile.generatedAccessMode",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "accessProfile.pathPrefix",
        "created_resources_deploy_list_their_access_and_delete_cleanly",
    ),
    (
        "autoDeploy.enabled",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "autoDeploy.triggerKind",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "autoDeploy.refs",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "autoDeploy.eventKinds",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "autoDeploy.sourceBindingFingerprint",
        "a_push_deploys_its_commit_through_a_signed_webhook_without_dropping_a_request",
    ),
    (
        "storageAttachments",
        "storage_attachments_keep_data_across_deployments_and_detaching",
    ),
    (
        "firstDeployment",
        "the_cli_migrates_a_compose_file_and_undoes_it",
    ),
    (
        "deploymentHistoryLimit",
        "twelve_redeploys_keep_the_history_limit_and_every_timeline",
    ),
    (
        "variables",
        "a_deployed_container_gets_the_effective_config_and_changes_wait_for_a_deployment",
    ),
    (
        "secretsRef",
        "a_deployed_container_gets_the_effective_config_and_changes_wait_for_a_deployment",
    ),
    (
        "dependencyBindings",
        "a_bound_app_reaches_its_database_by_url_and_keeps_its_rows",
    ),
    (
        "imagePullSecretRef",
        "a_missing_image_is_pulled_from_a_private_registry_with_the_pull_secret",
    ),
    (
        "runtime",
        "spec_runtime_applied_with_kubectl_stops_blocks_a_restart_and_starts",
    ),
];

/// A spec a source or strategy would not honour, and the field the refusal names.
struct Refusal {
    spec: Value,
    field: &'static str,
}

fn refusals() -> Vec<Refusal> {
    let git = json!({ "kind": "git-public", "locator": "https://git.example/acme/app.git" });
    let image = json!({ "kind": "docker-image", "locator": "berth/sample-app:1" });
    let web = json!({ "internalPort": 8080 });
    let case = |spec: Value, field| Refusal { spec, field };
    vec![
        case(
            json!({ "source": git, "networkProfile": web,
            "runtimeProfile": { "buildCommand": "make" } }),
            "runtimeProfile.buildCommand",
        ),
        case(
            json!({ "source": image, "networkProfile": web,
            "runtimeProfile": { "installCommand": "npm ci", "baseImage": "node" } }),
            "runtimeProfile.installCommand",
        ),
        case(
            json!({ "source": image, "networkProfile": web,
            "runtimeProfile": { "dockerfilePath": "Dockerfile" } }),
            "runtimeProfile.dockerfilePath",
        ),
        case(
            json!({ "source": git, "kind": "static-site",
            "runtimeProfile": { "startCommand": "serve" } }),
            "runtimeProfile.startCommand",
        ),
        case(
            json!({ "source": git, "networkProfile": web,
            "runtimeProfile": { "strategy": "dockerfile", "publishDirectory": "dist" } }),
            "runtimeProfile.publishDirectory",
        ),
        case(
            json!({ "source": git, "networkProfile": web,
            "runtimeProfile": { "strategy": "workspace-commands", "baseImage": "node" } }),
            "runtimeProfile.startCommand",
        ),
        case(
            json!({ "source": git, "networkProfile": web,
            "runtimeProfile": { "baseImage": "node", "startCommand": "node .", "buildTarget": "run" } }),
            "runtimeProfile.buildTarget",
        ),
        case(
            json!({ "source": git, "kind": "static-site",
            "runtimeProfile": { "baseImage": "node" } }),
            "runtimeProfile.baseImage",
        ),
        case(
            json!({ "source": git, "networkProfile": web,
            "runtimeProfile": { "strategy": "prebuilt-image" } }),
            "runtimeProfile.strategy",
        ),
        case(
            json!({ "source": git, "kind": "compose-stack", "networkProfile": web,
            "runtimeProfile": { "strategy": "dockerfile" } }),
            "runtimeProfile.strategy",
        ),
        case(
            json!({ "source": git, "networkProfile": web,
            "runtimeProfile": { "dockerComposeFilePath": "compose.yaml" } }),
            "runtimeProfile.dockerComposeFilePath",
        ),
        case(
            json!({ "source": image,
            "networkProfile": { "internalPort": 8080, "targetServiceName": "web" } }),
            "networkProfile.targetServiceName",
        ),
        case(
            json!({ "source": image,
            "networkProfile": { "internalPort": 8080, "hostPort": 18080 } }),
            "networkProfile.hostPort",
        ),
        case(
            json!({ "source": image,
            "networkProfile": { "internalPort": 5432, "upstreamProtocol": "tcp" } }),
            "networkProfile.upstreamProtocol",
        ),
        case(
            json!({ "source": image,
            "networkProfile": { "internalPort": 8080, "exposureMode": "none" },
            "accessProfile": { "pathPrefix": "/api" } }),
            "accessProfile.pathPrefix",
        ),
        case(
            json!({ "networkProfile": web,
            "source": { "kind": "docker-image", "locator": "app:1", "gitRef": "main" } }),
            "source.gitRef",
        ),
        case(
            json!({ "networkProfile": web,
            "source": { "kind": "git-public", "locator": "https://git.example/a/b.git", "metadata": { "branch": "main" } } }),
            "source.metadata.branch",
        ),
        case(
            json!({ "networkProfile": web, "source": { "kind": "git", "locator": "https://git.example/a/b.git" } }),
            "source.kind",
        ),
        case(json!({ "kind": "external", "source": image }), "source"),
    ]
}

/// The leaf fields of the Resource spec in the generated CRD: a dotted path per field, lists
/// and maps taken whole, the health check and runtime control as one field each.
fn spec_fields() -> BTreeSet<String> {
    let path = repo_root().join("manifests/crds/resources.berth.dev.yaml");
    let crd: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let mut fields = BTreeSet::new();
    walk(spec, "", &mut fields);
    fields
}

fn walk(schema: &Value, prefix: &str, fields: &mut BTreeSet<String>) {
    let whole = [
        "runtimeProfile.healthCheck",
        "runtime",
        "imagePullSecretRef",
    ];
    match schema["properties"].as_object() {
        Some(properties) if !whole.contains(&prefix) => {
            for (name, child) in properties {
                let path = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}.{name}")
                };
                walk(child, &path, fields);
            }
        }
        _ => {
            fields.insert(prefix.to_string());
        }
    }
}

fn test_names() -> String {
    let mut sources = String::new();
    let dir = repo_root().join("tests/integration");
    let mut stack = vec![dir];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                sources.push_str(&std::fs::read_to_string(path).unwrap());
            }
        }
    }
    sources
}

#[test]
fn every_spec_field_has_a_verdict_and_each_effect_a_test() {
    let fields = spec_fields();
    let refused: BTreeSet<&str> = refusals().iter().map(|r| r.field).collect();
    let effects: BTreeSet<&str> = EFFECTS.iter().map(|(field, _)| *field).collect();
    let unjudged: Vec<&String> = fields
        .iter()
        .filter(|f| {
            !effects.contains(f.as_str()) && !refused.iter().any(|r| r.starts_with(f.as_str()))
        })
        .collect();
    assert!(
        unjudged.is_empty(),
        "fields with no effect test and no refusal: {unjudged:?}"
    );
    let sources = test_names();
    for (field, test) in EFFECTS {
        assert!(fields.contains(*field), "{field} is no field of the spec");
        assert!(
            sources.contains(&format!("fn {test}(")),
            "{field}: no test {test}"
        );
    }
}

#[tokio::test]
async fn fields_berth_would_not_honour_are_refused_over_rest_and_kubectl() {
    let client = client().await;
    let mut org = TestOrg::new(&client).await;
    let admin = org.user(OrganizationRole::Admin).await.rest;
    let shop = project(&admin, "Shop").await;
    let prod = environment(&admin, &shop, "prod").await;
    for refusal in refusals() {
        let mut body = json!({ "projectId": shop, "environmentId": prod, "name": "walk", "kind": "application" });
        for (key, value) in refusal.spec.as_object().unwrap() {
            body[key] = value.clone();
        }
        let reply = admin.post("/resources", body.clone()).await;
        assert_eq!(reply.status, 422, "{body}: {:?}", reply.body);
        assert_eq!(
            reply.body["error"]["details"]["field"], refusal.field,
            "{body}: {:?}",
            reply.body
        );
    }
    let listed = admin.get("/resources").await.ok();
    assert_eq!(listed["items"], json!([]), "a refused resource was created");

    // Applied with kubectl, the API server stores the spec (its schema cannot judge it); the
    // Resource then says which field and starts nothing.
    let ns = TestNamespace::new(&client, "fields").await;
    crate::deployments::ready_server(&ns).await;
    for (index, refusal) in refusals().into_iter().enumerate() {
        let name = format!("walk-{index}");
        let mut spec = json!({
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": name, "kind": "application",
        });
        for (key, value) in refusal.spec.as_object().unwrap() {
            spec[key] = value.clone();
        }
        if spec["kind"] == "external" {
            spec.as_object_mut().unwrap().remove("serverId");
        }
        let manifest = json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": { "name": name, "namespace": ns.name }, "spec": spec,
        });
        let output = kubectl(&["apply", "-f", "-"], Some(&manifest.to_string()));
        assert!(output.status.success(), "{manifest}: {output:?}");
        let resources = ns.api::<Resource>();
        let message = eventually(Duration::from_secs(120), &format!("{name} judged"), || {
            let (resources, name) = (resources.clone(), name.clone());
            async move {
                let resource = resources.get(&name).await.ok()?;
                let ready = resource
                    .status?
                    .conditions
                    .into_iter()
                    .find(|c| c.type_ == READY)?;
                (ready.reason == "InvalidSpec").then_some(ready.message)
            }
        })
        .await;
        assert!(message.contains(refusal.field), "{name}: {message}");
    }
    let attempts = ns
        .api::<Deployment>()
        .list(&Default::default())
        .await
        .unwrap();
    assert!(
        attempts.items.is_empty(),
        "an attempt started for a refused spec"
    );
}
