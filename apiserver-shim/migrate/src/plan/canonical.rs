//! The canonical bundle: strings trimmed, host names and the provider lower-cased, every array
//! in code-point order (not a locale's collation, unlike Appaloft), so the same bundle written
//! in any order gives the same plan and digests.

use berth_api::migrations::{
    BundleDependency, BundleResource, BundleRuntime, BundleSource, BundleVariable, MigrationBundle,
};

/// What an adapter may leave in `deploymentTargetId` when it knows no server.
const TARGET_PLACEHOLDER: &str = "\"\"";

fn trim(text: &mut String) {
    let trimmed = text.trim();
    if trimmed.len() != text.len() {
        *text = trimmed.to_string();
    }
}

fn trim_opt(text: &mut Option<String>) {
    if let Some(text) = text {
        trim(text);
    }
}

/// Trims every string but variable values (whitespace may be the value), lower-cases host
/// names and the provider, drops empty descriptions and the `""` target placeholder. Runs
/// before validation, which then sees what the plan will use.
pub fn normalize(bundle: &mut MigrationBundle) {
    for text in [
        &mut bundle.api_version,
        &mut bundle.kind,
        &mut bundle.metadata.name,
    ] {
        trim(text);
    }
    if let Some(origin) = &mut bundle.metadata.source {
        trim(&mut origin.provider);
        origin.provider = origin.provider.to_lowercase();
        trim_opt(&mut origin.project_ref);
    }
    let spec = &mut bundle.spec;
    trim(&mut spec.project.name);
    trim_opt(&mut spec.project.organization_id);
    drop_empty(&mut spec.project.description);
    trim(&mut spec.environment.name);
    trim(&mut spec.environment.kind);
    trim(&mut spec.target.deployment_target_id);
    if spec.target.deployment_target_id == TARGET_PLACEHOLDER {
        spec.target.deployment_target_id.clear();
    }
    trim_opt(&mut spec.target.destination_id);
    spec.resources.iter_mut().for_each(normalize_resource);
    spec.variables.iter_mut().for_each(normalize_variable);
    spec.dependencies.iter_mut().for_each(normalize_dependency);
    for volume in &mut spec.volumes {
        for text in [
            &mut volume.reference,
            &mut volume.name,
            &mut volume.resource_ref,
        ] {
            trim(text);
        }
        trim(&mut volume.mount_path);
    }
    for domain in &mut spec.domains {
        trim(&mut domain.hostname);
        domain.hostname = domain.hostname.to_lowercase();
        trim(&mut domain.resource_ref);
        trim(&mut domain.tls_policy);
    }
    for blocker in &mut spec.source_blockers {
        for text in [&mut blocker.code, &mut blocker.path, &mut blocker.message] {
            trim(text);
        }
    }
    spec.source_warnings.iter_mut().for_each(trim);
}

fn drop_empty(text: &mut Option<String>) {
    trim_opt(text);
    if text.as_deref() == Some("") {
        *text = None;
    }
}

fn normalize_resource(resource: &mut BundleResource) {
    for text in [
        &mut resource.reference,
        &mut resource.name,
        &mut resource.kind,
    ] {
        trim(text);
    }
    drop_empty(&mut resource.description);
    for service in &mut resource.services {
        trim(&mut service.name);
        trim(&mut service.kind);
    }
    normalize_source(&mut resource.source);
    normalize_runtime(&mut resource.runtime);
    if let Some(network) = &mut resource.network {
        trim(&mut network.upstream_protocol);
        trim(&mut network.exposure_mode);
        trim_opt(&mut network.target_service_name);
    }
}

fn normalize_source(source: &mut BundleSource) {
    trim(&mut source.kind);
    trim(&mut source.locator);
    for text in [
        &mut source.git_ref,
        &mut source.commit_sha,
        &mut source.base_directory,
        &mut source.image_digest,
    ] {
        trim_opt(text);
    }
}

fn normalize_runtime(runtime: &mut BundleRuntime) {
    trim(&mut runtime.strategy);
    for text in [
        &mut runtime.install_command,
        &mut runtime.build_command,
        &mut runtime.start_command,
        &mut runtime.publish_directory,
        &mut runtime.dockerfile_path,
        &mut runtime.docker_compose_file_path,
        &mut runtime.health_check_path,
    ] {
        trim_opt(text);
    }
}

fn normalize_variable(variable: &mut BundleVariable) {
    trim(&mut variable.key);
    trim(&mut variable.exposure);
    trim(&mut variable.kind);
    trim_opt(&mut variable.secret_ref);
    trim_opt(&mut variable.resource_ref);
}

fn normalize_dependency(dependency: &mut BundleDependency) {
    for text in [
        &mut dependency.reference,
        &mut dependency.name,
        &mut dependency.kind,
        &mut dependency.source_mode,
        &mut dependency.provider_key,
    ] {
        trim(text);
    }
    trim_opt(&mut dependency.connection_secret_ref);
    trim_opt(&mut dependency.image);
    for binding in &mut dependency.bindings {
        for text in [
            &mut binding.resource_ref,
            &mut binding.target_name,
            &mut binding.scope,
            &mut binding.injection_mode,
        ] {
            trim(text);
        }
    }
}

/// Sorts every array by its identity (`String`'s `Ord` is code-point order). Validation has
/// refused duplicates, so the order is total.
pub fn sort(bundle: &mut MigrationBundle) {
    let spec = &mut bundle.spec;
    spec.resources.sort_by(|a, b| a.reference.cmp(&b.reference));
    for resource in &mut spec.resources {
        resource.services.sort_by(|a, b| a.name.cmp(&b.name));
    }
    spec.variables
        .sort_by(|a, b| variable_key(a).cmp(&variable_key(b)));
    spec.dependencies
        .sort_by(|a, b| a.reference.cmp(&b.reference));
    for dependency in &mut spec.dependencies {
        dependency.bindings.sort_by(|a, b| {
            (&a.resource_ref, &a.target_name).cmp(&(&b.resource_ref, &b.target_name))
        });
    }
    spec.volumes.sort_by(|a, b| a.reference.cmp(&b.reference));
    spec.domains.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    spec.source_blockers
        .sort_by(|a, b| (&a.path, &a.code, &a.message).cmp(&(&b.path, &b.code, &b.message)));
    spec.source_blockers.dedup();
    spec.source_warnings.sort();
    spec.source_warnings.dedup();
}

/// A variable's identity: its resource (`""` for the environment), key and exposure.
pub fn variable_key(variable: &BundleVariable) -> (&str, &str, &str) {
    (
        variable.resource_ref.as_deref().unwrap_or(""),
        &variable.key,
        &variable.exposure,
    )
}
