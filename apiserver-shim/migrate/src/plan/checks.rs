//! What the plan reports beside its steps: blockers (what stops apply), warnings (what apply
//! does differently from the source) and the variable report. None of them holds a value.

use std::collections::{BTreeSet, HashSet};

use berth_api::migrations::{BundleDependency, MigrationBundle, VariableReport};

use super::blocker;
use super::managed;
use super::resource::Findings;
use super::secrets::looks_like_secret;

/// Blockers and warnings of the whole bundle (the resources' own come from their steps).
pub fn review(bundle: &MigrationBundle, found: &mut Findings) {
    review_refs(bundle, found);
    for dependency in &bundle.spec.dependencies {
        review_dependency(dependency, found);
    }
    if bundle.spec.target.deployment_target_id.is_empty() {
        found.blockers.push(blocker(
            "target_missing",
            "spec.target.deploymentTargetId",
            "The bundle names no deployment target: set spec.target.deploymentTargetId to a Berth server id.".into(),
        ));
    }
    review_domains(bundle, found);
    review_conflicts(bundle, found);
    review_warnings(bundle, found);
}

/// `unknown_resource_ref` for each item naming a resource the bundle lacks (it gets no step).
fn review_refs(bundle: &MigrationBundle, found: &mut Findings) {
    let spec = &bundle.spec;
    let resources: BTreeSet<&str> = spec
        .resources
        .iter()
        .map(|r| r.reference.as_str())
        .collect();
    let mut missing = Vec::new();
    let mut unknown = |kind: &str, name: &str, path: String, target: &str| {
        if !resources.contains(target) {
            missing.push(blocker(
                "unknown_resource_ref",
                &path,
                format!("{kind} \"{name}\" references unknown resource \"{target}\"."),
            ));
        }
    };
    for variable in &spec.variables {
        if let Some(target) = &variable.resource_ref {
            unknown(
                "Variable",
                &variable.key,
                format!("spec.variables.{}.resourceRef", variable.key),
                target,
            );
        }
    }
    for volume in &spec.volumes {
        let path = format!("spec.volumes.{}.resourceRef", volume.reference);
        unknown("Volume", &volume.reference, path, &volume.resource_ref);
    }
    for domain in &spec.domains {
        let path = format!("spec.domains.{}.resourceRef", domain.hostname);
        unknown("Domain", &domain.hostname, path, &domain.resource_ref);
    }
    for dependency in &spec.dependencies {
        for binding in &dependency.bindings {
            let path = format!(
                "spec.dependencies.{}.bindings.{}.resourceRef",
                dependency.reference, binding.target_name
            );
            unknown("Binding", &binding.target_name, path, &binding.resource_ref);
        }
    }
    found.blockers.extend(missing);
}

/// Without a connection secret a PostgreSQL or Redis is provisioned by Berth (another kind is a
/// blocker); an imported one is a connection secret, injected as an environment variable at
/// runtime.
fn review_dependency(dependency: &BundleDependency, found: &mut Findings) {
    let name = &dependency.reference;
    let path = format!("spec.dependencies.{name}");
    match (&dependency.connection_secret_ref, dependency.source_mode.as_str()) {
        (None, _) => managed::review(dependency, found),
        (Some(_), "appaloft-managed") => found.warnings.push(format!(
            "Dependency {name} is managed by the source platform; Berth binds its connectionSecretRef as an imported dependency and does not manage it."
        )),
        _ => {}
    }
    for binding in &dependency.bindings {
        let target = &binding.target_name;
        if binding.injection_mode == "file" {
            found.blockers.push(blocker(
                "dependency_file_injection_unsupported",
                &format!("{path}.bindings.{target}.injectionMode"),
                format!("Binding \"{target}\" of dependency \"{name}\" asks for file injection; Berth injects connections as environment variables only."),
            ));
        }
        if binding.scope == "build-and-runtime" {
            found.warnings.push(format!(
                "Binding {target} of dependency {name} is injected at runtime only; Berth does not pass dependency connections to builds."
            ));
        }
    }
}

/// A domain needs a resource that listens (a network profile exposed through the proxy), and
/// a certificate Berth issues itself.
fn review_domains(bundle: &MigrationBundle, found: &mut Findings) {
    for domain in &bundle.spec.domains {
        let host = &domain.hostname;
        let path = format!("spec.domains.{host}");
        if domain.tls_policy == "manual" {
            found.blockers.push(blocker(
                "manual_tls_unsupported",
                &format!("{path}.tlsPolicy"),
                format!("Domain \"{host}\" has a manual certificate; Berth issues certificates itself: use tlsPolicy automatic or disabled."),
            ));
        }
        let resource = bundle
            .spec
            .resources
            .iter()
            .find(|r| r.reference == domain.resource_ref);
        let listens = resource.map(|r| {
            r.network
                .as_ref()
                .is_some_and(|n| n.exposure_mode != "none")
        });
        if listens == Some(false) {
            found.blockers.push(blocker(
                "domain_without_port",
                &path,
                format!("Domain \"{host}\" is bound to resource \"{}\", which has no network port exposed to the proxy.", domain.resource_ref),
            ));
        }
    }
}

/// Two steps setting one key and exposure on one resource would race: a dependency binding
/// whose target name a variable of the resource already sets, or two bindings of one name.
/// The environment's variables and secrets are set on the environment, not the resource: a
/// binding of the same name wins over them, as a resource's own value does.
fn review_conflicts(bundle: &MigrationBundle, found: &mut Findings) {
    let spec = &bundle.spec;
    let mut taken: HashSet<(String, String)> = spec
        .variables
        .iter()
        .filter(|v| v.exposure == "runtime")
        .filter_map(|v| Some((v.resource_ref.clone()?, v.key.clone())))
        .collect();
    for dependency in spec.dependencies.iter().filter(|d| managed::is_bindable(d)) {
        for binding in &dependency.bindings {
            let key = (binding.resource_ref.clone(), binding.target_name.clone());
            if !taken.insert(key) {
                found.blockers.push(blocker(
                    "variable_conflict",
                    &format!("spec.dependencies.{}.bindings.{}.targetName", dependency.reference, binding.target_name),
                    format!(
                        "Binding \"{}\" of dependency \"{}\" sets a runtime variable resource \"{}\" already gets from a variable or another binding.",
                        binding.target_name, dependency.reference, binding.resource_ref
                    ),
                ));
            }
        }
    }
}

fn review_warnings(bundle: &MigrationBundle, found: &mut Findings) {
    let spec = &bundle.spec;
    for variable in &spec.variables {
        let Some(value) = &variable.value else {
            continue;
        };
        if looks_like_secret(&variable.key, value) {
            let owner = match &variable.resource_ref {
                Some(resource) => format!("resource {resource}"),
                None => "the environment".to_string(),
            };
            found.warnings.push(format!(
                "Variable {} of {owner} looks like a secret but is migrated as a plain value; give it a secretRef.",
                variable.key
            ));
        }
    }
    if spec.project.organization_id.is_some() {
        found.warnings.push("spec.project.organizationId is not migrated: the project is created in the caller's organization.".into());
    }
    for volume in spec.volumes.iter().filter(|v| v.size_mb.is_some()) {
        found.warnings.push(format!(
            "Volume {}: sizeMb is not migrated; Berth's named volumes have no size limit.",
            volume.reference
        ));
    }
    found.warnings.extend(spec.source_warnings.iter().cloned());
}

/// How each variable and each dependency binding of the bundle is migrated.
pub fn variable_report(bundle: &MigrationBundle) -> Vec<VariableReport> {
    let spec = &bundle.spec;
    let known = |r: &str| spec.resources.iter().any(|res| res.reference == r);
    let unknown_note = |r: &str| Some(format!("resource \"{r}\" is not in the bundle"));
    let mut report = Vec::new();
    for variable in &spec.variables {
        let (migrated_as, note) = match (&variable.resource_ref, &variable.value) {
            (Some(r), _) if !known(r) => ("not-migrated", unknown_note(r)),
            (None, None) => (
                "secret-ref",
                Some("set as a secret of every resource".into()),
            ),
            (_, None) => ("secret-ref", None),
            (_, Some(_)) => ("value", None),
        };
        report.push(entry(
            &variable.key,
            variable.resource_ref.clone(),
            migrated_as,
            note,
        ));
    }
    for dependency in &spec.dependencies {
        for binding in &dependency.bindings {
            let r = &binding.resource_ref;
            let (migrated_as, note) = match &dependency.connection_secret_ref {
                _ if !known(r) => ("not-migrated", unknown_note(r)),
                None if managed::is_managed(dependency) => {
                    ("dependency-binding", Some(managed::report_note(dependency)))
                }
                None => (
                    "not-migrated",
                    Some(format!(
                        "dependency \"{}\" has no connectionSecretRef",
                        dependency.reference
                    )),
                ),
                Some(_) if managed::is_importable(dependency) => (
                    "dependency-binding",
                    Some(format!(
                        "connection of dependency \"{}\", imported by Berth and checked from the \
                         target server",
                        dependency.reference
                    )),
                ),
                Some(_) => (
                    "dependency-binding",
                    Some(format!(
                        "connection of dependency \"{}\"",
                        dependency.reference
                    )),
                ),
            };
            report.push(entry(
                &binding.target_name,
                Some(r.clone()),
                migrated_as,
                note,
            ));
        }
    }
    report
}

fn entry(
    key: &str,
    resource_ref: Option<String>,
    migrated_as: &str,
    note: Option<String>,
) -> VariableReport {
    VariableReport {
        key: key.into(),
        resource_ref,
        migrated_as: migrated_as.into(),
        note,
    }
}
