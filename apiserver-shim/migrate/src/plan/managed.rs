//! A source platform's PostgreSQL or Redis (a bundle dependency without a connection secret)
//! becomes a dependency resource Berth runs, provisioned after the environment exists and
//! bound to each app before it deploys. Its data is not copied: the plan says so and how to
//! restore a dump into it.

use berth_api::migrations::{BundleDependency, MigrationBundle, Step};
use serde_json::json;

use super::blocker;
use super::placeholder;
use super::resource::Findings;
use super::shape::{ENVIRONMENT, PROJECT, cleanup, produces, step};

/// The kinds Berth provisions itself (`POST /dependency-resources/provision`).
pub const MANAGED_KINDS: &[&str] = &["postgres", "redis"];

/// A dependency Berth provisions: managed by its platform (not an external one whose URL is
/// missing), no connection secret to import, and a kind Berth runs.
pub fn is_managed(dependency: &BundleDependency) -> bool {
    dependency.connection_secret_ref.is_none()
        && dependency.source_mode != "imported-external"
        && MANAGED_KINDS.contains(&&*dependency.kind)
}

/// An external PostgreSQL or Redis whose URL the bundle names: imported as a dependency
/// resource (`POST /dependency-resources/import`), checked from the target server and bound.
pub fn is_importable(dependency: &BundleDependency) -> bool {
    dependency.connection_secret_ref.is_some() && MANAGED_KINDS.contains(&&*dependency.kind)
}

/// A dependency whose connection a binding can inject: imported or provisioned.
pub fn is_bindable(dependency: &BundleDependency) -> bool {
    dependency.connection_secret_ref.is_some() || is_managed(dependency)
}

/// The step that makes the dependency resource: its provision, or its import.
pub fn provision_id(dependency: &BundleDependency) -> String {
    let how = if is_managed(dependency) {
        "provision"
    } else {
        "import"
    };
    format!("dependency:{how}:{}", dependency.reference)
}

/// The step that makes the dependency resource: `dependency-resources.provision` on the
/// plan's target server (deleting it is undone last of its steps, its bindings first, and
/// keeps its data volume), or `dependency-resources.import` of an external one, its URL the
/// bundle's connection secret (resolved at apply, never in the plan; deleting it removes only
/// what Berth keeps of it, never the database).
pub fn dependency_step(bundle: &MigrationBundle, dependency: &BundleDependency) -> Step {
    let mut input = json!({
        "kind": dependency.kind,
        "projectId": placeholder(PROJECT, "projectId"),
        "environmentId": placeholder(ENVIRONMENT, "environmentId"),
        "serverId": bundle.spec.target.deployment_target_id,
        "name": dependency.name,
    });
    let map = input.as_object_mut().expect("an object");
    if let Some(image) = &dependency.image {
        map.insert("image".into(), json!(image));
    }
    let operation = match &dependency.connection_secret_ref {
        Some(url) => {
            map.insert("connectionUrl".into(), json!({"$secretRef": url}));
            "dependency-resources.import"
        }
        None => "dependency-resources.provision",
    };
    let made = step(
        provision_id(dependency),
        operation,
        vec![ENVIRONMENT.into()],
        input,
    );
    cleanup(
        produces(made, "dependencyResourceId"),
        "dependency-resources.delete",
        None,
    )
}

/// `resources.bind-dependency` of each provisioned or imported dependency bound to resource
/// `name`.
pub fn bind_steps(bundle: &MigrationBundle, name: &str, created: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let bound_by_berth = |d: &&BundleDependency| is_managed(d) || is_importable(d);
    for dependency in bundle.spec.dependencies.iter().filter(bound_by_berth) {
        let provisioned = provision_id(dependency);
        for binding in dependency
            .bindings
            .iter()
            .filter(|b| b.resource_ref == name)
        {
            let input = json!({
                "resourceId": placeholder(created, "resourceId"),
                "dependencyResourceId": placeholder(&provisioned, "dependencyResourceId"),
                "targetName": binding.target_name,
            });
            let id = format!(
                "dependency:bind:{}:{name}:{}",
                dependency.reference, binding.target_name
            );
            let depends_on = vec![created.to_string(), provisioned.clone()];
            let bind = step(id, "resources.bind-dependency", depends_on, input);
            steps.push(cleanup(bind, "resources.unbind-dependency", None));
        }
    }
    steps
}

/// A dependency without a connection secret: provisioned empty (a warning with how to restore
/// its data), or a blocker when Berth does not run its kind.
pub fn review(dependency: &BundleDependency, found: &mut Findings) {
    let (name, kind) = (&dependency.reference, &dependency.kind);
    if is_managed(dependency) {
        found.warnings.push(format!(
            "Dependency {name} ({kind}) is provisioned empty by Berth as a managed {kind}: its \
             data is not copied. {}",
            restore_hint(kind)
        ));
        return;
    }
    let path = format!("spec.dependencies.{name}");
    if dependency.source_mode == "imported-external" {
        found.blockers.push(blocker(
            "dependency_connection_missing",
            &path,
            format!(
                "Dependency \"{name}\" is imported-external but has no connectionSecretRef: give \
                 it one, or make it appaloft-managed for Berth to provision a {kind}."
            ),
        ));
        return;
    }
    found.blockers.push(blocker(
        "dependency_provider_unavailable",
        &path,
        format!(
            "Dependency \"{name}\" is a {kind} without a connectionSecretRef: Berth provisions \
             only {} itself. Give it a connectionSecretRef (imported-external) or declare the \
             database as a resource of kind database with an image.",
            MANAGED_KINDS.join(" and ")
        ),
    ));
}

/// How to bring a source database's data over once the migration is applied.
fn restore_hint(kind: &str) -> &'static str {
    match kind {
        "postgres" => {
            "To restore it, dump the source (pg_dump) and load the dump through `berth db connect \
             <name>` (psql in its container), or restore a Berth backup into it with POST \
             /api/dependency-resources/backups/{backupId}/restore \
             {targetDependencyResourceId, acknowledgeDataOverwrite: true, \
             acknowledgeRuntimeNotRestarted: true}."
        }
        _ => {
            "To restore it, restore a Berth backup (a Redis snapshot) into it with POST \
             /api/dependency-resources/backups/{backupId}/restore \
             {targetDependencyResourceId, acknowledgeDataOverwrite: true, \
             acknowledgeRuntimeNotRestarted: true}, or write the keys again through `berth db \
             connect <name>` (redis-cli in its container)."
        }
    }
}

/// The variable report's entry of a binding to a provisioned dependency.
pub fn report_note(dependency: &BundleDependency) -> String {
    format!(
        "connection of dependency \"{}\", provisioned by Berth (its data is not copied)",
        dependency.reference
    )
}
