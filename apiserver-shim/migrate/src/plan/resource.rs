//! The `resources.create` input of one bundle resource: Berth's `CreateResource` body, checked
//! by that body's own `validate` so a plan never holds a step the shim would refuse unseen.

use berth_api::build::SourceKind;
use berth_api::migrations::{Blocker, BundleResource, BundleRuntime, BundleTarget};
use berth_api::resources::CreateResource;
use serde_json::{Map, Value, json};

use super::secrets::looks_like_secret;
use super::{blocker, placeholder};

/// What one resource contributes besides its step.
#[derive(Default)]
pub struct Findings {
    pub blockers: Vec<Blocker>,
    pub warnings: Vec<String>,
}

/// The input of `resource:create:<ref>`.
pub fn create_input(
    resource: &BundleResource,
    target: &BundleTarget,
    found: &mut Findings,
) -> Map<String, Value> {
    let path = format!("spec.resources.{}", resource.reference);
    let known_blockers = found.blockers.len();
    let mut input = Map::new();
    input.insert(
        "projectId".into(),
        placeholder("project:create", "projectId"),
    );
    input.insert(
        "environmentId".into(),
        placeholder("environment:create", "environmentId"),
    );
    input.insert("name".into(), json!(resource.name));
    input.insert("kind".into(), json!(resource.kind));
    input.insert("slug".into(), json!(resource.reference));
    // The plan's deployment step deploys it, once its variables, secrets, volumes and domains
    // exist.
    input.insert("firstDeployment".into(), json!("on-request"));
    if !target.deployment_target_id.is_empty() {
        input.insert("serverId".into(), json!(target.deployment_target_id));
    }
    insert_opt(&mut input, "destinationId", &target.destination_id);
    insert_opt(&mut input, "description", &resource.description);
    if !resource.services.is_empty() {
        input.insert("services".into(), json!(resource.services));
    }
    input.insert("source".into(), source(resource, &path, found));
    if let Some(profile) = runtime_profile(&resource.runtime, &path, found) {
        input.insert("runtimeProfile".into(), profile);
    }
    if let Some(network) = &resource.network {
        let mut profile = Map::new();
        profile.insert("internalPort".into(), json!(network.internal_port));
        profile.insert("upstreamProtocol".into(), json!(network.upstream_protocol));
        profile.insert("exposureMode".into(), json!(network.exposure_mode));
        insert_opt(
            &mut profile,
            "targetServiceName",
            &network.target_service_name,
        );
        input.insert("networkProfile".into(), Value::Object(profile));
    }
    // A source or strategy already blocked would only be reported twice.
    if found.blockers.len() == known_blockers {
        check_with_berth(&input, &path, found);
    }
    input
}

pub(crate) fn insert_opt(map: &mut Map<String, Value>, key: &str, value: &Option<String>) {
    if let Some(value) = value {
        map.insert(key.into(), json!(value));
    }
}

/// `SourceInput` has no `imageDigest`: it is left out with a warning. A kind Berth does not
/// deploy blocks the plan; a locator with a password is kept (it is the source) but flagged.
fn source(resource: &BundleResource, path: &str, found: &mut Findings) -> Value {
    let source = &resource.source;
    let name = &resource.reference;
    let mut out = Map::new();
    out.insert("kind".into(), json!(source.kind));
    out.insert("locator".into(), json!(source.locator));
    insert_opt(&mut out, "gitRef", &source.git_ref);
    insert_opt(&mut out, "commitSha", &source.commit_sha);
    insert_opt(&mut out, "baseDirectory", &source.base_directory);
    if source.image_digest.is_some() {
        found.warnings.push(format!(
            "Resource {name}: source.imageDigest is not migrated (Berth's source has no image digest); pin the digest in the locator (image@sha256:…) to keep it."
        ));
    }
    if SourceKind::parse("source.kind", &source.kind).is_err() {
        let kinds: Vec<_> = SourceKind::ALL.iter().map(|k| k.as_str()).collect();
        found.blockers.push(blocker(
            "source_kind_unsupported",
            &format!("{path}.source.kind"),
            format!(
                "Resource \"{name}\" has source kind \"{}\", which Berth does not deploy; use one of: {}.",
                source.kind,
                kinds.join(", ")
            ),
        ));
    }
    if looks_like_secret("", &source.locator) {
        found.warnings.push(format!(
            "Resource {name}: the source locator carries a password; use a deploy key or a credential instead."
        ));
    }
    Value::Object(out)
}

/// Berth's runtime profile: the strategy (unless `auto`), the commands and the health check
/// path. `helm` has no Berth equivalent and blocks.
fn runtime_profile(runtime: &BundleRuntime, path: &str, found: &mut Findings) -> Option<Value> {
    let mut out = Map::new();
    match runtime.strategy.as_str() {
        "auto" => {}
        "helm" => found.blockers.push(blocker(
            "runtime_strategy_unsupported",
            &format!("{path}.runtime.strategy"),
            "Berth does not deploy Helm charts; use a docker-image or git source.".into(),
        )),
        strategy => {
            out.insert("strategy".into(), json!(strategy));
        }
    }
    insert_opt(&mut out, "installCommand", &runtime.install_command);
    insert_opt(&mut out, "buildCommand", &runtime.build_command);
    insert_opt(&mut out, "startCommand", &runtime.start_command);
    insert_opt(&mut out, "publishDirectory", &runtime.publish_directory);
    insert_opt(&mut out, "dockerfilePath", &runtime.dockerfile_path);
    insert_opt(
        &mut out,
        "dockerComposeFilePath",
        &runtime.docker_compose_file_path,
    );
    if let Some(health) = &runtime.health_check_path {
        out.insert("healthCheck".into(), json!({"path": health}));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// Deserializes the input (placeholders as stand-in ids) into `CreateResource` and runs its
/// checks; a failure is a blocker naming the body's field.
fn check_with_berth(input: &Map<String, Value>, path: &str, found: &mut Findings) {
    let mut body = input.clone();
    for key in ["projectId", "environmentId"] {
        body.insert(key.into(), json!("placeholder"));
    }
    let checked = serde_json::from_value::<CreateResource>(Value::Object(body))
        .map_err(|_| "a field has the wrong type or value".to_string())
        .and_then(|body| body.validate().map_err(|e| e.message));
    if let Err(message) = checked {
        found.blockers.push(blocker(
            "resource_input_invalid",
            path,
            format!("Berth would refuse this resource: {message}."),
        ));
    }
}
