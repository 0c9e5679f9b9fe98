//! Plans of sample Resources, case by case: names, labels, routes, ports and each source kind.
//! [`sample_plan`] serves the other deployment modules' tests too.

use super::*;
use crate::routes::{STATIC_SITE_PORT, direct_route};
use berth_crds::resource::ResourceSpec;
use berth_crds::server::ServerSpec;

fn resource(extra: Value) -> Resource {
    let mut spec = json!({
        "projectId": "prj-1", "environmentId": "env-1", "serverId": "local",
        "name": "Sample App", "kind": "application",
        "source": { "kind": "docker-image", "locator": "berth/sample-app:1" },
        "networkProfile": { "internalPort": 8080 },
        "variables": [{ "key": "GREETING", "value": "hi" }],
    });
    if let (Value::Object(spec), Value::Object(extra)) = (&mut spec, extra) {
        spec.extend(extra);
    }
    let spec: ResourceSpec = serde_json::from_value(spec).unwrap();
    let mut resource = Resource::new("web", spec);
    resource.metadata.namespace = Some("org-acme".into());
    resource
}

fn server(base_domain: Option<&str>) -> Server {
    let spec: ServerSpec = serde_json::from_value(json!({
        "host": "127.0.0.1", "username": "root", "credentialId": "key",
        "baseDomain": base_domain,
        "proxy": { "kind": "caddy", "httpPort": 8080, "httpsPort": 8443 },
    }))
    .unwrap();
    Server::new("local", spec)
}

/// `resource`'s plan on the default server, without a source snapshot or volumes.
fn plan_for(resource: &Resource, deployment: &str) -> Result<Plan, PlanError> {
    plan(
        resource,
        &server(None),
        deployment,
        None,
        &AttachedVolumes::new(),
    )
}

/// A plan for the sample app, for tests of later steps.
pub fn sample_plan() -> Plan {
    plan_for(&resource(json!({})), "dep-web-1").unwrap()
}

#[test]
fn a_preview_serves_on_its_own_network() {
    let mut preview = resource(json!({}));
    preview.metadata.labels = Some(
        [(
            berth_crds::preview::PREVIEW_LABEL.to_string(),
            "web-pr-7".to_string(),
        )]
        .into(),
    );
    let plan = plan_for(&preview, "dep-web-1").unwrap();
    assert!(
        plan.network
            .starts_with(berth_crds::preview::PREVIEW_NETWORK_PREFIX)
    );
    assert_ne!(
        plan.network,
        plan_for(&resource(json!({})), "dep-web-1").unwrap().network
    );
}

#[test]
fn plans_labels_env_name_and_default_route() {
    let plan = plan_for(&resource(json!({})), "dep-web-1").unwrap();
    assert_eq!(plan.container_name, "berth-org-acme-web-dep-web-1");
    assert_eq!(plan.image, "berth/sample-app:1");
    assert_eq!(plan.labels[DEPLOYMENT_LABEL], "dep-web-1");
    assert_eq!(plan.labels[berth_crds::MANAGED_LABEL], "true");
    assert_eq!(
        plan.network, "berth-edge",
        "production serves on the shared edge network"
    );
    let route = plan.route.unwrap();
    assert_eq!(route.hostname, "sample-app.localhost");
    assert_eq!(route.url, "http://sample-app.localhost:8080/");
    assert_eq!(plan.health.port(), Some(8080));
}

#[test]
fn long_container_names_stay_one_dns_label_and_distinct() {
    let long = "r".repeat(40);
    let a = container_name("org-some-organization", &long, "dep-x-1");
    let b = container_name("org-some-organization", &long, "dep-x-2");
    assert!(a.len() <= 63 && b.len() <= 63, "{a} {b}");
    assert_ne!(a, b);
    assert!(a.starts_with("berth-org-some-organization-rrr"));
    assert_eq!(a, container_name("org-some-organization", &long, "dep-x-1"));
}

#[test]
fn direct_port_publishes_without_a_route_and_tcp_needs_it() {
    let direct = resource(json!({
        "networkProfile": { "internalPort": 5432, "exposureMode": "direct-port", "hostPort": 15432, "upstreamProtocol": "tcp" },
    }));
    let planned = plan_for(&direct, "d").unwrap();
    assert_eq!(planned.route, None);
    assert_eq!(planned.host_port, Some(15432));
    assert_eq!(planned.health.probe, Probe::Tcp { port: 5432 });
    let url = direct_route(&direct, &server(None)).unwrap().url;
    assert_eq!(url, "http://127.0.0.1:15432/");
    let missing = resource(json!({
        "networkProfile": { "internalPort": 8080, "exposureMode": "direct-port" },
    }));
    let error = plan_for(&missing, "d").unwrap_err();
    assert_eq!(error.code, "host_port_missing");
    let proxied_tcp = resource(json!({
        "networkProfile": { "internalPort": 5432, "upstreamProtocol": "tcp" },
    }));
    let error = plan_for(&proxied_tcp, "d").unwrap_err();
    assert_eq!(error.code, "tcp_reverse_proxy_unsupported");
    let hidden = resource(json!({
        "networkProfile": { "internalPort": 8080, "exposureMode": "none" },
    }));
    let planned = plan_for(&hidden, "d").unwrap();
    assert_eq!((planned.route, planned.host_port), (None, None));
    let stored = resource(json!({
        "storageAttachments": [{ "attachmentId": "a1", "storageVolumeId": "uploads", "destinationPath": "/data" }],
    }));
    let error = plan_for(&stored, "d").unwrap_err();
    assert_eq!(error.code, "storage_volume_not_found");
}

#[test]
fn base_domain_and_path_prefix_shape_the_route() {
    let resource = resource(json!({
        "slug": "shop", "accessProfile": { "pathPrefix": "/api/" },
    }));
    let route = route(&resource, &server(Some("apps.example.com"))).unwrap();
    assert_eq!(route.hostname, "shop.apps.example.com");
    let caddy = caddy_route(&route, "c1", 8080);
    assert_eq!(caddy["match"][0]["path"], json!(["/api", "/api/*"]));
    assert_eq!(caddy["handle"][1]["upstreams"][0]["dial"], "c1:8080");
    // The failure evidence of the route names its resource; successes are not logged.
    assert_eq!(caddy["handle"][0]["berth_resource"], "web");
    assert_eq!(caddy["handle"][0]["berth_path_prefix"], "/api/");
    assert_eq!(caddy["handle"][0]["skip_log"], true);
}

#[test]
fn other_source_kinds_are_refused_with_a_code() {
    let resource = resource(json!({ "source": { "kind": "git", "locator": "x" } }));
    let error = plan_for(&resource, "d").unwrap_err();
    assert_eq!(error.code, "source_kind_unsupported");
    assert!(error.message.contains("remote-git"), "{}", error.message);
}

#[test]
fn a_local_folder_runs_the_image_its_attempt_builds_and_its_start_command() {
    let resource = resource(json!({
        "source": { "kind": "local-folder", "locator": "/srv/app" },
        "runtimeProfile": { "strategy": "dockerfile", "startCommand": "./serve --port 8080" },
    }));
    let plan = plan_for(&resource, "dep-web-2").unwrap();
    assert_eq!(plan.image, "berth-built/org-acme/web:dep-web-2");
    assert!(matches!(plan.packaging, Packaging::Build(_)));
    assert_eq!(plan.start_command.as_deref(), Some("./serve --port 8080"));
}

#[test]
fn a_rollback_serves_the_earlier_image_without_a_build() {
    let resource = resource(json!({
        "source": { "kind": "local-folder", "locator": "/srv/app" },
    }));
    let mut plan = plan_for(&resource, "dep-web-3").unwrap();
    serve_image(&mut plan, "berth-built/org-acme/web:dep-web-1", None);
    assert_eq!(plan.image, "berth-built/org-acme/web:dep-web-1");
    assert!(matches!(
        plan.packaging,
        Packaging::Pull { pull_secret: None }
    ));
    assert_eq!(plan.container_name, "berth-org-acme-web-dep-web-3");
}

#[test]
fn a_static_site_needs_no_network_profile() {
    let resource = resource(json!({
        "kind": "static-site", "networkProfile": null,
        "source": { "kind": "local-folder", "locator": "/srv/site" },
    }));
    let plan = plan_for(&resource, "dep-web-1").unwrap();
    assert_eq!(plan.internal_port, Some(STATIC_SITE_PORT));
    assert_eq!(plan.health.port(), Some(STATIC_SITE_PORT));
    let Packaging::Build(build) = plan.packaging else {
        panic!("a static site is built")
    };
    assert!(matches!(build.recipe, Recipe::Static { .. }));
}

#[test]
fn an_app_without_a_port_gets_no_route_and_is_checked_by_running_or_a_command() {
    let worker = resource(json!({ "kind": "worker", "networkProfile": null }));
    let planned = plan_for(&worker, "d").unwrap();
    assert_eq!(planned.internal_port, None);
    assert_eq!(planned.route, None);
    assert_eq!(planned.health.probe, Probe::Running);
    let checked = resource(json!({ "networkProfile": null, "runtimeProfile": {
        "healthCheck": { "type": "command", "command": "test -f /tmp/ready", "retries": 5 },
    }}));
    let planned = plan_for(&checked, "d").unwrap();
    let command = "test -f /tmp/ready".to_string();
    assert_eq!(planned.health.probe, Probe::Command { command });
    assert_eq!(planned.health.retries, 5);
    let http_without_port = resource(json!({ "networkProfile": null, "runtimeProfile": {
        "healthCheck": { "path": "/healthz" },
    }}));
    let error = plan_for(&http_without_port, "d").unwrap_err();
    assert_eq!(error.code, Code::HealthCheckInvalid);
    let no_command =
        resource(json!({ "runtimeProfile": { "healthCheck": { "type": "command" } } }));
    let error = plan_for(&no_command, "d").unwrap_err();
    assert!(
        error.message.contains("healthCheck.command"),
        "{}",
        error.message
    );
}
