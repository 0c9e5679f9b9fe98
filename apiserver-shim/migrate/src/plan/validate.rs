//! The bundle's 4xx rules, checked on the normalized bundle before it is sorted, so an error
//! names the item by its index as the client sent it (`bundle.spec.resources[2].ref`). Values
//! are never echoed; refs, keys and host names (identifiers, not secrets) may be.

use std::collections::HashMap;

use berth_api::limits::NAME_MAX;
use berth_api::migrations::{
    BundleDependency, BundleDomain, BundleResource, BundleVariable, BundleVolume, MigrationBundle,
};
use berth_api::validate::{Checked, FieldError, bounded, dns_label};

use super::canonical::variable_key;
use super::limits;
use super::secrets::{is_dns_label, parse_secret_ref};

/// The environment kinds Berth accepts: the same closed set the CRD and the shim check.
pub use berth_api::environments::ENVIRONMENT_KINDS;
pub const RESOURCE_KINDS: &[&str] = &[
    "application",
    "service",
    "database",
    "cache",
    "compose-stack",
    "worker",
    "static-site",
    "external",
];
pub const SERVICE_KINDS: &[&str] = &["web", "api", "worker", "database", "cache", "service"];
pub const SOURCE_KINDS: &[&str] = &[
    "local-folder",
    "local-git",
    "remote-git",
    "git-public",
    "git-github-app",
    "git-deploy-key",
    "zip-artifact",
    "dockerfile-inline",
    "docker-compose-inline",
    "docker-image",
    "compose",
    "helm-chart",
];
pub const STRATEGIES: &[&str] = &[
    "auto",
    "dockerfile",
    "docker-compose",
    "prebuilt-image",
    "workspace-commands",
    "static",
    "helm",
];
pub const PROTOCOLS: &[&str] = &["http", "tcp"];
pub const EXPOSURE_MODES: &[&str] = &["none", "reverse-proxy", "direct-port"];
pub const EXPOSURES: &[&str] = &["build-time", "runtime"];
pub const VARIABLE_KINDS: &[&str] = &[
    "plain-config",
    "secret",
    "provider-specific",
    "deployment-strategy",
];
pub const DEPENDENCY_KINDS: &[&str] = &[
    "postgres",
    "mysql",
    "redis",
    "mongodb",
    "clickhouse",
    "generic",
];
pub const SOURCE_MODES: &[&str] = &["appaloft-managed", "imported-external"];
pub const SCOPES: &[&str] = &["runtime-only", "build-and-runtime"];
pub const INJECTION_MODES: &[&str] = &["env", "file"];
pub const TLS_POLICIES: &[&str] = &["automatic", "manual", "disabled"];

/// Longest ref (a DNS label's length: it becomes the resource's slug).
const REF_MAX: usize = 63;
/// Longest variable key, binding target name, or host name.
const KEY_MAX: usize = 253;

fn required(field: &str, value: &str) -> Checked {
    bounded(field, value, limits::STRING_MAX)
}

fn optional(field: &str, value: Option<&String>) -> Checked {
    value.map_or(Ok(()), |v| required(field, v))
}

fn one_of(field: &str, value: &str, allowed: &[&str]) -> Checked {
    match allowed.contains(&value) {
        true => Ok(()),
        false => Err(FieldError::not_one_of(field, allowed)),
    }
}

/// `^[a-z][a-z0-9-]*$`, at most 63 characters.
fn reference(field: &str, value: &str) -> Checked {
    let valid = value.len() <= REF_MAX
        && value.starts_with(|c: char| c.is_ascii_lowercase())
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    match valid {
        true => Ok(()),
        false => Err(FieldError {
            max: Some(REF_MAX as i64),
            ..FieldError::new(
                field,
                format!("{field} must match ^[a-z][a-z0-9-]*$ and be at most {REF_MAX} characters"),
            )
        }),
    }
}

/// An environment variable name as Berth's variables take it: a letter or `_`, then letters,
/// digits, `_`, `.` or `-`.
fn variable_name(field: &str, value: &str) -> Checked {
    let mut bytes = value.bytes();
    let valid = value.len() <= KEY_MAX
        && bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    match valid {
        true => Ok(()),
        false => Err(FieldError::new(
            field,
            format!(
                "{field} must start with a letter or _ and hold only letters, digits, _ . - (at most {KEY_MAX})"
            ),
        )),
    }
}

fn hostname(field: &str, value: &str) -> Checked {
    match value.len() <= KEY_MAX && value.contains('.') && value.split('.').all(is_dns_label) {
        true => Ok(()),
        false => Err(FieldError::new(
            field,
            format!(
                "{field} must be a DNS name: dot-separated labels of letters, digits and dashes"
            ),
        )),
    }
}

/// Refuses the second item whose identity repeats, naming its field.
fn unique<K: std::hash::Hash + Eq>(
    items: impl IntoIterator<Item = K>,
    field: impl Fn(usize) -> String,
    what: &str,
) -> Checked {
    let mut seen: HashMap<K, usize> = HashMap::new();
    for (i, key) in items.into_iter().enumerate() {
        if let Some(first) = seen.insert(key, i) {
            let field = field(i);
            return Err(FieldError::new(
                &field,
                format!("{field}: {what} must be unique; item {first} has the same"),
            ));
        }
    }
    Ok(())
}

/// Every rule of the normalized bundle.
pub fn check(bundle: &MigrationBundle) -> Checked {
    required("bundle.metadata.name", &bundle.metadata.name)?;
    if let Some(origin) = &bundle.metadata.source {
        required("bundle.metadata.source.provider", &origin.provider)?;
        optional(
            "bundle.metadata.source.projectRef",
            origin.project_ref.as_ref(),
        )?;
    }
    let spec = &bundle.spec;
    bounded("bundle.spec.project.name", &spec.project.name, NAME_MAX)?;
    optional(
        "bundle.spec.project.organizationId",
        spec.project.organization_id.as_ref(),
    )?;
    bounded(
        "bundle.spec.environment.name",
        &spec.environment.name,
        NAME_MAX,
    )?;
    one_of(
        "bundle.spec.environment.kind",
        &spec.environment.kind,
        ENVIRONMENT_KINDS,
    )?;
    optional(
        "bundle.spec.target.destinationId",
        spec.target.destination_id.as_ref(),
    )?;
    limits::check_counts(spec)?;
    for (i, resource) in spec.resources.iter().enumerate() {
        check_resource(&format!("bundle.spec.resources[{i}]"), resource)?;
    }
    for (i, variable) in spec.variables.iter().enumerate() {
        check_variable(&format!("bundle.spec.variables[{i}]"), variable)?;
    }
    for (i, dependency) in spec.dependencies.iter().enumerate() {
        check_dependency(&format!("bundle.spec.dependencies[{i}]"), dependency)?;
    }
    for (i, volume) in spec.volumes.iter().enumerate() {
        check_volume(&format!("bundle.spec.volumes[{i}]"), volume)?;
    }
    for (i, domain) in spec.domains.iter().enumerate() {
        check_domain(&format!("bundle.spec.domains[{i}]"), domain)?;
    }
    for (i, blocker) in spec.source_blockers.iter().enumerate() {
        let field = format!("bundle.spec.sourceBlockers[{i}]");
        required(&format!("{field}.code"), &blocker.code)?;
        required(&format!("{field}.path"), &blocker.path)?;
        required(&format!("{field}.message"), &blocker.message)?;
    }
    for (i, warning) in spec.source_warnings.iter().enumerate() {
        required(&format!("bundle.spec.sourceWarnings[{i}]"), warning)?;
    }
    check_unique(bundle)
}

fn check_resource(field: &str, resource: &BundleResource) -> Checked {
    reference(&format!("{field}.ref"), &resource.reference)?;
    bounded(&format!("{field}.name"), &resource.name, NAME_MAX)?;
    one_of(&format!("{field}.kind"), &resource.kind, RESOURCE_KINDS)?;
    for (i, service) in resource.services.iter().enumerate() {
        dns_label(
            &format!("{field}.services[{i}].name"),
            &service.name,
            REF_MAX,
        )?;
        one_of(
            &format!("{field}.services[{i}].kind"),
            &service.kind,
            SERVICE_KINDS,
        )?;
    }
    unique(
        resource.services.iter().map(|s| &s.name),
        |i| format!("{field}.services[{i}].name"),
        "service names of a resource",
    )?;
    let source = &resource.source;
    one_of(&format!("{field}.source.kind"), &source.kind, SOURCE_KINDS)?;
    required(&format!("{field}.source.locator"), &source.locator)?;
    for (name, value) in [
        ("gitRef", &source.git_ref),
        ("commitSha", &source.commit_sha),
        ("baseDirectory", &source.base_directory),
        ("imageDigest", &source.image_digest),
    ] {
        optional(&format!("{field}.source.{name}"), value.as_ref())?;
    }
    check_runtime(&format!("{field}.runtime"), resource)?;
    let Some(network) = &resource.network else {
        return Ok(());
    };
    let port = i64::from(network.internal_port);
    berth_api::validate::in_range(
        &format!("{field}.network.internalPort"),
        Some(port),
        1,
        65_535,
    )?;
    one_of(
        &format!("{field}.network.upstreamProtocol"),
        &network.upstream_protocol,
        PROTOCOLS,
    )?;
    one_of(
        &format!("{field}.network.exposureMode"),
        &network.exposure_mode,
        EXPOSURE_MODES,
    )?;
    optional(
        &format!("{field}.network.targetServiceName"),
        network.target_service_name.as_ref(),
    )
}

fn check_runtime(field: &str, resource: &BundleResource) -> Checked {
    let runtime = &resource.runtime;
    one_of(&format!("{field}.strategy"), &runtime.strategy, STRATEGIES)?;
    for (name, value) in [
        ("installCommand", &runtime.install_command),
        ("buildCommand", &runtime.build_command),
        ("startCommand", &runtime.start_command),
        ("publishDirectory", &runtime.publish_directory),
        ("dockerfilePath", &runtime.dockerfile_path),
        ("dockerComposeFilePath", &runtime.docker_compose_file_path),
        ("healthCheckPath", &runtime.health_check_path),
    ] {
        optional(&format!("{field}.{name}"), value.as_ref())?;
    }
    match &runtime.health_check_path {
        Some(path) if !path.starts_with('/') => {
            let field = format!("{field}.healthCheckPath");
            Err(FieldError::new(
                &field,
                format!("{field} must start with /"),
            ))
        }
        _ => Ok(()),
    }
}

fn check_variable(field: &str, variable: &BundleVariable) -> Checked {
    variable_name(&format!("{field}.key"), &variable.key)?;
    one_of(&format!("{field}.exposure"), &variable.exposure, EXPOSURES)?;
    one_of(&format!("{field}.kind"), &variable.kind, VARIABLE_KINDS)?;
    if let Some(resource) = &variable.resource_ref {
        reference(&format!("{field}.resourceRef"), resource)?;
    }
    let secret_field = format!("{field}.secretRef");
    match (&variable.value, &variable.secret_ref) {
        (Some(_), Some(_)) | (None, None) => Err(FieldError::new(
            &secret_field,
            format!("{field} must have exactly one of value and secretRef"),
        )),
        (Some(_), None) if variable.kind == "secret" => Err(FieldError::new(
            &secret_field,
            format!("{field} has kind secret: it needs a secretRef, not a value"),
        )),
        (Some(value), None) => match value.len() > limits::STRING_MAX {
            true => Err(FieldError::new(
                &format!("{field}.value"),
                format!("{field}.value must be at most {} bytes", limits::STRING_MAX),
            )),
            false => Ok(()),
        },
        (None, Some(text)) => parse_secret_ref(&secret_field, text).map(drop),
    }
}

fn check_dependency(field: &str, dependency: &BundleDependency) -> Checked {
    reference(&format!("{field}.ref"), &dependency.reference)?;
    bounded(&format!("{field}.name"), &dependency.name, NAME_MAX)?;
    one_of(&format!("{field}.kind"), &dependency.kind, DEPENDENCY_KINDS)?;
    one_of(
        &format!("{field}.sourceMode"),
        &dependency.source_mode,
        SOURCE_MODES,
    )?;
    required(&format!("{field}.providerKey"), &dependency.provider_key)?;
    if let Some(text) = &dependency.connection_secret_ref {
        parse_secret_ref(&format!("{field}.connectionSecretRef"), text)?;
    }
    optional(&format!("{field}.image"), dependency.image.as_ref())?;
    for (i, binding) in dependency.bindings.iter().enumerate() {
        let field = format!("{field}.bindings[{i}]");
        reference(&format!("{field}.resourceRef"), &binding.resource_ref)?;
        variable_name(&format!("{field}.targetName"), &binding.target_name)?;
        one_of(&format!("{field}.scope"), &binding.scope, SCOPES)?;
        one_of(
            &format!("{field}.injectionMode"),
            &binding.injection_mode,
            INJECTION_MODES,
        )?;
    }
    unique(
        dependency
            .bindings
            .iter()
            .map(|b| (&b.resource_ref, &b.target_name)),
        |i| format!("{field}.bindings[{i}].targetName"),
        "(resourceRef, targetName) of a dependency's bindings",
    )
}

fn check_volume(field: &str, volume: &BundleVolume) -> Checked {
    reference(&format!("{field}.ref"), &volume.reference)?;
    bounded(&format!("{field}.name"), &volume.name, NAME_MAX)?;
    reference(&format!("{field}.resourceRef"), &volume.resource_ref)?;
    let mount = format!("{field}.mountPath");
    required(&mount, &volume.mount_path)?;
    if !volume.mount_path.starts_with('/') {
        return Err(FieldError::new(
            &mount,
            format!("{mount} must be an absolute path"),
        ));
    }
    if volume.size_mb == Some(0) {
        let size = format!("{field}.sizeMb");
        return Err(FieldError::new(&size, format!("{size} must be positive")));
    }
    Ok(())
}

fn check_domain(field: &str, domain: &BundleDomain) -> Checked {
    hostname(&format!("{field}.hostname"), &domain.hostname)?;
    reference(&format!("{field}.resourceRef"), &domain.resource_ref)?;
    one_of(
        &format!("{field}.tlsPolicy"),
        &domain.tls_policy,
        TLS_POLICIES,
    )
}

/// Duplicates Appaloft lets through (and then plans twice): refused, naming the second.
fn check_unique(bundle: &MigrationBundle) -> Checked {
    let spec = &bundle.spec;
    unique(
        spec.resources.iter().map(|r| &r.reference),
        |i| format!("bundle.spec.resources[{i}].ref"),
        "resource refs",
    )?;
    unique(
        spec.volumes.iter().map(|v| &v.reference),
        |i| format!("bundle.spec.volumes[{i}].ref"),
        "volume refs",
    )?;
    unique(
        spec.dependencies.iter().map(|d| &d.reference),
        |i| format!("bundle.spec.dependencies[{i}].ref"),
        "dependency refs",
    )?;
    unique(
        spec.domains.iter().map(|d| &d.hostname),
        |i| format!("bundle.spec.domains[{i}].hostname"),
        "host names",
    )?;
    unique(
        spec.variables.iter().map(variable_key),
        |i| format!("bundle.spec.variables[{i}].key"),
        "(resourceRef, key, exposure) of variables",
    )
}
