//! The canonical bundle → the plan's steps, in Berth's order: project, environment, its
//! variables and secrets, volumes, managed dependencies, then per resource its creation,
//! variables and secrets, dependency bindings, volume attachments, domains and deployment. Each
//! input is the body of Berth's ordinary REST operation plus its path parameters.

use std::collections::BTreeSet;

use berth_api::migrations::{BundleDomain, BundleResource, BundleVariable, MigrationBundle, Step};
use serde_json::{Map, Value, json};

use super::managed;
use super::placeholder;
use super::resource::{Findings, create_input, insert_opt};
use super::shape::{ENVIRONMENT, PROJECT, cleanup, produces, step};

fn secret(text: &str) -> Value {
    json!({"$secretRef": text})
}

/// Steps, with what building them found (blockers and warnings of the resources).
pub fn build(bundle: &MigrationBundle, found: &mut Findings) -> Vec<Step> {
    let spec = &bundle.spec;
    let resources: BTreeSet<&str> = spec
        .resources
        .iter()
        .map(|r| r.reference.as_str())
        .collect();
    let mut steps = vec![project_step(bundle), environment_step(bundle)];
    // Before the resources (and so their deployments), which inherit them.
    for variable in spec.variables.iter().filter(|v| v.resource_ref.is_none()) {
        match (&variable.value, &variable.secret_ref) {
            (Some(value), _) => steps.push(environment_variable(variable, value)),
            (None, Some(reference)) => steps.push(environment_secret(variable, reference)),
            (None, None) => {}
        }
    }
    for volume in spec
        .volumes
        .iter()
        .filter(|v| resources.contains(v.resource_ref.as_str()))
    {
        let input = json!({
            "projectId": placeholder(PROJECT, "projectId"),
            "environmentId": placeholder(ENVIRONMENT, "environmentId"),
            "name": volume.name,
            "kind": "named-volume",
        });
        let id = format!("volume:create:{}", volume.reference);
        let created = step(
            id,
            "storage-volumes.create",
            vec![ENVIRONMENT.into()],
            input,
        );
        steps.push(cleanup(
            produces(created, "storageVolumeId"),
            "storage-volumes.delete",
            None,
        ));
    }
    // Before the resources, so each binding's dependency exists when the app is bound.
    for dependency in &spec.dependencies {
        if managed::is_managed(dependency) || managed::is_importable(dependency) {
            steps.push(managed::dependency_step(bundle, dependency));
        }
    }
    for resource in &spec.resources {
        resource_steps(bundle, resource, found, &mut steps);
    }
    steps
}

fn project_step(bundle: &MigrationBundle) -> Step {
    let project = &bundle.spec.project;
    let mut input = Map::new();
    input.insert("name".into(), json!(project.name));
    insert_opt(&mut input, "description", &project.description);
    let created = step(
        PROJECT.into(),
        "projects.create",
        vec![],
        Value::Object(input),
    );
    cleanup(produces(created, "projectId"), "projects.archive", None)
}

fn environment_step(bundle: &MigrationBundle) -> Step {
    let environment = &bundle.spec.environment;
    let input = json!({
        "projectId": placeholder(PROJECT, "projectId"),
        "name": environment.name,
        "kind": environment.kind,
    });
    let created = step(
        ENVIRONMENT.into(),
        "environments.create",
        vec![PROJECT.into()],
        input,
    );
    cleanup(
        produces(created, "environmentId"),
        "environments.archive",
        None,
    )
}

/// A plain variable of the environment: `environment-variable:<KEY>:<exposure>`.
fn environment_variable(variable: &BundleVariable, value: &str) -> Step {
    let id = format!(
        "environment-variable:{}:{}",
        variable.key, variable.exposure
    );
    environment_entry(id, variable, json!(value), false)
}

/// A secret of the environment (Railway's shared variables that are secrets):
/// `environment-secret:<KEY>:<exposure>`, one step however many resources there are. Berth
/// keeps it in the Secret the environment owns and gives it to every resource of the
/// environment that does not set the key itself. The input holds the `$secretRef`, never the
/// value: apply resolves it (`resolve_input`) just before the call.
fn environment_secret(variable: &BundleVariable, reference: &str) -> Step {
    let id = format!("environment-secret:{}:{}", variable.key, variable.exposure);
    environment_entry(id, variable, secret(reference), true)
}

/// `environments.set-variable` (`POST /environments/{environmentId}/variables`, the route
/// that keeps plain values in the environment's spec and secret ones in its Secret), undone
/// by `environments.unset-variable` of the same key and exposure.
fn environment_entry(id: String, variable: &BundleVariable, value: Value, is_secret: bool) -> Step {
    let input = json!({
        "environmentId": placeholder(ENVIRONMENT, "environmentId"),
        "key": variable.key,
        "value": value,
        "exposure": variable.exposure,
        "kind": if is_secret { "secret" } else { "plain-config" },
        "scope": "environment",
        "isSecret": is_secret,
    });
    let set = step(
        id,
        "environments.set-variable",
        vec![ENVIRONMENT.into()],
        input,
    );
    let undo = json!({"exposure": variable.exposure, "scope": "environment"});
    cleanup(set, "environments.unset-variable", Some(undo))
}

/// A resource's steps, its deployment last, depending on all the others.
fn resource_steps(
    bundle: &MigrationBundle,
    resource: &BundleResource,
    found: &mut Findings,
    steps: &mut Vec<Step>,
) {
    let spec = &bundle.spec;
    let name = &resource.reference;
    let created_id = format!("resource:create:{name}");
    let input = create_input(resource, &spec.target, found);
    let created = step(
        created_id.clone(),
        "resources.create",
        vec![ENVIRONMENT.into()],
        Value::Object(input),
    );
    steps.push(cleanup(
        produces(created, "resourceId"),
        "resources.delete",
        None,
    ));
    let first = steps.len();
    steps.extend(variable_steps(bundle, resource, &created_id));
    steps.extend(binding_steps(bundle, name, &created_id));
    steps.extend(managed::bind_steps(bundle, name, &created_id));
    for volume in spec.volumes.iter().filter(|v| &v.resource_ref == name) {
        let volume_step = format!("volume:create:{}", volume.reference);
        let input = json!({
            "resourceId": placeholder(&created_id, "resourceId"),
            "storageVolumeId": placeholder(&volume_step, "storageVolumeId"),
            "destinationPath": volume.mount_path,
        });
        let id = format!("volume:attach:{}:{name}", volume.reference);
        let attach = step(
            id,
            "resources.attach-storage",
            vec![created_id.clone(), volume_step],
            input,
        );
        steps.push(cleanup(
            produces(attach, "attachmentId"),
            "resources.detach-storage",
            None,
        ));
    }
    for domain in spec.domains.iter().filter(|d| &d.resource_ref == name) {
        steps.push(domain_step(bundle, domain, &created_id));
    }
    if resource.kind == "external" {
        return;
    }
    let mut depends_on = vec![created_id.clone()];
    depends_on.extend(steps[first..].iter().map(|s| s.id.clone()));
    steps.push(deployment_step(bundle, name, &created_id, depends_on));
}

/// The resource's own variables and secrets, by key and exposure. The environment's secrets
/// are not repeated here: they are the environment's steps, and the resource inherits them
/// (its own value of a key wins).
fn variable_steps(bundle: &MigrationBundle, resource: &BundleResource, created: &str) -> Vec<Step> {
    let name = resource.reference.as_str();
    let mut own: Vec<&BundleVariable> = bundle
        .spec
        .variables
        .iter()
        .filter(|v| v.resource_ref.as_deref() == Some(name))
        .collect();
    own.sort_by(|a, b| (&a.key, &a.exposure).cmp(&(&b.key, &b.exposure)));
    own.into_iter()
        .map(|variable| match (&variable.value, &variable.secret_ref) {
            (Some(value), _) => resource_variable(name, created, variable, value),
            (None, secret_ref) => {
                let text = secret_ref.as_deref().unwrap_or_default();
                let id = format!(
                    "resource-secret:{name}:{}:{}",
                    variable.key, variable.exposure
                );
                resource_secret(id, created, &variable.key, &variable.exposure, secret(text))
            }
        })
        .collect()
}

/// The connection secrets of imported dependencies Berth does not check (kinds other than
/// PostgreSQL and Redis), set on the resource under the binding's name. The others are
/// provisioned or imported, and bound (see `managed`).
fn binding_steps(bundle: &MigrationBundle, name: &str, created: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for dependency in &bundle.spec.dependencies {
        let Some(connection) = &dependency.connection_secret_ref else {
            continue;
        };
        if managed::is_importable(dependency) {
            continue;
        }
        for binding in dependency
            .bindings
            .iter()
            .filter(|b| b.resource_ref == name)
        {
            let id = format!(
                "dependency:bind:{}:{name}:{}",
                dependency.reference, binding.target_name
            );
            let value = secret(connection);
            steps.push(resource_secret(
                id,
                created,
                &binding.target_name,
                "runtime",
                value,
            ));
        }
    }
    steps
}

fn resource_variable(name: &str, created: &str, variable: &BundleVariable, value: &str) -> Step {
    let input = json!({
        "resourceId": placeholder(created, "resourceId"),
        "key": variable.key,
        "value": value,
        "exposure": variable.exposure,
    });
    let id = format!(
        "resource-variable:{name}:{}:{}",
        variable.key, variable.exposure
    );
    let set = step(id, "resources.set-variable", vec![created.into()], input);
    cleanup(
        set,
        "resources.unset-variable",
        Some(json!({"exposure": variable.exposure})),
    )
}

/// `resources.set-secret` of a `$secretRef` (a resource's secret or a dependency binding).
pub fn resource_secret(id: String, created: &str, key: &str, exposure: &str, value: Value) -> Step {
    let input = json!({
        "resourceId": placeholder(created, "resourceId"),
        "key": key,
        "value": value,
        "exposure": exposure,
    });
    let set = step(id, "resources.set-secret", vec![created.into()], input);
    cleanup(
        set,
        "resources.delete-secret",
        Some(json!({"exposure": exposure})),
    )
}

fn domain_step(bundle: &MigrationBundle, domain: &BundleDomain, created: &str) -> Step {
    let tls = if domain.tls_policy == "disabled" {
        "disabled"
    } else {
        "auto"
    };
    let mut input = json!({
        "projectId": placeholder(PROJECT, "projectId"),
        "environmentId": placeholder(ENVIRONMENT, "environmentId"),
        "resourceId": placeholder(created, "resourceId"),
        "serverId": bundle.spec.target.deployment_target_id,
        "domainName": domain.hostname,
        "proxyKind": "caddy",
        "tlsMode": tls,
        "certificatePolicy": tls,
    });
    if let (Some(map), Some(destination)) =
        (input.as_object_mut(), &bundle.spec.target.destination_id)
    {
        map.insert("destinationId".into(), json!(destination));
    }
    let id = format!("domain:create:{}", domain.hostname);
    let created = step(id, "domain-bindings.create", vec![created.into()], input);
    cleanup(
        produces(created, "domainBindingId"),
        "domain-bindings.delete",
        None,
    )
}

fn deployment_step(
    bundle: &MigrationBundle,
    name: &str,
    created: &str,
    depends_on: Vec<String>,
) -> Step {
    let mut input = json!({
        "projectId": placeholder(PROJECT, "projectId"),
        "environmentId": placeholder(ENVIRONMENT, "environmentId"),
        "resourceId": placeholder(created, "resourceId"),
        "serverId": bundle.spec.target.deployment_target_id,
    });
    if let (Some(map), Some(destination)) =
        (input.as_object_mut(), &bundle.spec.target.destination_id)
    {
        map.insert("destinationId".into(), json!(destination));
    }
    let deploy = step(
        format!("deployment:create:{name}"),
        "deployments.create",
        depends_on,
        input,
    );
    cleanup(
        produces(deploy, "deploymentId"),
        "deployments.cleanup-runtime",
        None,
    )
}
