//! Berth's custom resource types: API group `berth.dev`, version `v1alpha1`.
//!
//! One module per kind. This crate does no I/O: it holds the types, their OpenAPI schemas (the
//! limits of spec §8 live there, so the API server rejects bad YAML) and pure helpers such as
//! condition merging.
#![forbid(unsafe_code)]

pub mod access_failure;
pub mod backup;
pub mod backup_policy;
pub mod certificate;
pub mod common;
pub mod condition;
pub mod config;
pub mod dependency_resource;
pub mod dependency_url;
pub mod deploy_token;
pub mod deployment;
pub mod domain_binding;
pub mod environment;
pub mod health;
pub mod invitation;
pub mod lifecycle;
pub mod limits;
pub mod masking;
pub mod member;
pub mod migration;
pub mod monitoring;
pub mod notification;
pub mod organization;
pub mod overlay_decision;
pub mod preview;
pub mod progress;
pub mod project;
pub mod resource;
pub mod retention_policy;
pub mod route_surface_decision;
pub mod runtime_control;
pub mod scheduled_task;
pub mod server;
pub mod session;
pub mod ssh_credential;
pub mod storage_volume;
pub mod threshold_policy;
pub mod usage_intent;
pub mod user;
pub mod variable;
pub mod volume_backup;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Annotation kubectl's client-side apply keeps a whole copy of the object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what no reader of a watch cache uses and what often makes up half an object's size:
/// the field managers and kubectl's last-applied copy. Caches then hold thousands of objects in
/// little memory.
pub fn trim_for_cache<K: kube::Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
    if let Some(annotations) = object.meta_mut().annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

pub use condition::{Condition, ConditionStatus};

/// API group of every Berth kind.
pub const GROUP: &str = "berth.dev";
/// API version of every Berth kind.
pub const VERSION: &str = "v1alpha1";
/// Label put on namespaces and objects Berth manages.
pub const MANAGED_LABEL: &str = "berth.dev/managed";
/// Label naming the organization a namespace belongs to.
pub const ORGANIZATION_LABEL: &str = "berth.dev/organization";
/// Label naming the Resource a container runs.
pub const RESOURCE_LABEL: &str = "berth.dev/resource";
/// Label naming the Deployment that started a container.
pub const DEPLOYMENT_LABEL: &str = "berth.dev/deployment";
/// Label naming the Project of a container.
pub const PROJECT_LABEL: &str = "berth.dev/project";
/// Label naming the Environment of a container.
pub const ENVIRONMENT_LABEL: &str = "berth.dev/environment";
/// Label naming the namespace (organization) a container belongs to: resource names are only
/// unique per namespace, and several namespaces may share one Docker host.
pub const NAMESPACE_LABEL: &str = "berth.dev/namespace";
/// Label of a Compose stack's long-lived service container (not the routed one): attempts
/// replace it only when it changed, and the stack repairs it when removed.
pub const SIDECAR_LABEL: &str = "berth.dev/sidecar";
/// Label naming the DependencyResource a container runs (with [`NAMESPACE_LABEL`]).
pub const DEPENDENCY_LABEL: &str = "berth.dev/dependency-resource";
/// The labels of a container that say whose it is, also put on the networks and volumes made
/// for it: Berth's, which namespace's and, for a preview's, which preview's. A leftovers check
/// lists a server's things by them.
pub fn owner_labels(
    labels: &std::collections::HashMap<String, String>,
) -> std::collections::HashMap<String, String> {
    const OWNER_LABELS: [&str; 3] = [MANAGED_LABEL, NAMESPACE_LABEL, preview::PREVIEW_LABEL];
    labels
        .iter()
        .filter(|(key, _)| OWNER_LABELS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}
/// Label on an imported dependency's connection Secret: its database has no private network
/// for bound apps to join.
pub const IMPORTED_CONNECTION_LABEL: &str = "berth.dev/imported-connection";
/// Annotation on a Deployment: the Resource generation it was created for, so one spec change
/// starts one attempt.
pub const GENERATION_ANNOTATION: &str = "berth.dev/resource-generation";
/// Annotation naming the kind of actor (`user`, `deploy-token`…) that last changed an object
/// through the REST API.
pub const UPDATED_BY_KIND: &str = "berth.dev/updated-by-actor-kind";
/// Annotation naming that actor (a user id or deploy token id).
pub const UPDATED_BY_ID: &str = "berth.dev/updated-by-actor-id";
/// The namespace holding cluster-wide Berth state (sessions, system policies, password hashes).
pub const SYSTEM_NAMESPACE: &str = "berth-system";

/// Every custom resource definition Berth installs, in a stable order.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    crds_as_derived()
        .into_iter()
        .map(normalize_schema)
        .collect()
}

fn crds_as_derived() -> Vec<CustomResourceDefinition> {
    vec![
        organization::Organization::crd(),
        project::Project::crd(),
        environment::Environment::crd(),
        user::User::crd(),
        session::Session::crd(),
        member::Member::crd(),
        invitation::Invitation::crd(),
        ssh_credential::SshCredential::crd(),
        server::Server::crd(),
        resource::Resource::crd(),
        storage_volume::StorageVolume::crd(),
        dependency_resource::DependencyResource::crd(),
        backup::BackupTarget::crd(),
        backup::DependencyResourceBackup::crd(),
        backup::DependencyResourceRestore::crd(),
        backup_policy::DependencyResourceBackupPolicy::crd(),
        backup_policy::StorageVolumeBackupPolicy::crd(),
        volume_backup::StorageVolumeBackup::crd(),
        volume_backup::StorageVolumeRestore::crd(),
        scheduled_task::ScheduledTask::crd(),
        scheduled_task::ScheduledTaskRun::crd(),
        notification::NotificationChannel::crd(),
        notification::NotificationDelivery::crd(),
        deployment::Deployment::crd(),
        domain_binding::DomainBinding::crd(),
        certificate::Certificate::crd(),
        deploy_token::DeployToken::crd(),
        threshold_policy::ThresholdPolicy::crd(),
        retention_policy::RetentionPolicy::crd(),
        usage_intent::UsageIntent::crd(),
        overlay_decision::OverlayDecision::crd(),
        route_surface_decision::RouteSurfaceDecision::crd(),
        migration::Migration::crd(),
        preview::PreviewPolicy::crd(),
        preview::PreviewEnvironment::crd(),
    ]
}

/// The manifest file name for a CRD: `<plural>.<group>.yaml`.
pub fn manifest_file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}

/// Renders one CRD as the YAML committed under `manifests/crds/`.
pub fn render_manifest(crd: &CustomResourceDefinition) -> String {
    let yaml = serde_yaml::to_string(crd).expect("a CRD always serializes");
    format!("# Generated by `cargo run -p berth-crds --bin crdgen`. Do not edit.\n{yaml}")
}

/// The `kustomization.yaml` listing every CRD manifest, so `manifests/` stays one `-k` apply.
pub fn render_kustomization(crds: &[CustomResourceDefinition]) -> String {
    let mut out = String::from(
        "# Generated by `cargo run -p berth-crds --bin crdgen`. Do not edit.\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n",
    );
    for crd in crds {
        out.push_str(&format!("  - {}\n", manifest_file_name(crd)));
    }
    out
}

/// Every generated file under `manifests/crds/`: (file name, contents).
pub fn generated_manifests() -> Vec<(String, String)> {
    let crds = all_crds();
    let mut files: Vec<(String, String)> = crds
        .iter()
        .map(|crd| (manifest_file_name(crd), render_manifest(crd)))
        .collect();
    files.push(("kustomization.yaml".into(), render_kustomization(&crds)));
    files
}

/// Fixes what the derived schemas get wrong for the API server: an optional enum is rendered
/// with `null` among its values, which `kubectl` validation rejects, and `nullable` hides
/// optional objects from `kubectl explain` on 1.20.
fn normalize_schema(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let mut value = serde_json::to_value(&crd).expect("a CRD always serializes");
    strip_null_enum_values(&mut value);
    keep_scalar_unions_as_they_are(&mut value);
    keep_arbitrary_maps_as_they_are(&mut value);
    variable::allow_empty_values(&mut value);
    serde_json::from_value(value).expect("normalizing keeps a valid CRD")
}

fn strip_null_enum_values(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            // Kubernetes 1.20 publishes a `nullable` object to kubectl without its fields, so
            // `kubectl explain` shows nothing under it. The API server prunes nulls of
            // non-nullable fields instead of rejecting them, so dropping the flag is safe.
            map.remove("nullable");
            map.values_mut().for_each(strip_null_enum_values);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_null_enum_values),
        _ => {}
    }
}

/// An untagged enum of scalars (a migration receipt's `output` values: text, number or flag)
/// is an `anyOf` whose branches kube stripped of their types, which is no structural schema.
/// The API server cannot check a union of types, so such a value is kept as it is and serde
/// checks it on reading.
fn keep_scalar_unions_as_they_are(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            let untyped_union = map
                .get("anyOf")
                .and_then(|a| a.as_array())
                .is_some_and(|branches| branches.iter().all(|branch| branch.get("type").is_none()));
            if untyped_union && map.get("type").is_none() {
                map.remove("anyOf");
                map.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
            }
            map.values_mut().for_each(keep_scalar_unions_as_they_are);
        }
        serde_json::Value::Array(items) => {
            items.iter_mut().for_each(keep_scalar_unions_as_they_are)
        }
        _ => {}
    }
}

/// A map of arbitrary JSON values (a migration step's `input`) is what schemars derives as
/// `additionalProperties: true`, which a structural schema cannot hold; the API server keeps
/// such an object as it is instead. Without the `additionalProperties`, which next to
/// `x-kubernetes-preserve-unknown-fields` makes Kubernetes 1.20 prune objects nested in lists.
fn keep_arbitrary_maps_as_they_are(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if map.get("additionalProperties") == Some(&serde_json::Value::Bool(true)) {
                map.remove("additionalProperties");
                map.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
            }
            map.values_mut().for_each(keep_arbitrary_maps_as_they_are);
        }
        serde_json::Value::Array(items) => {
            items.iter_mut().for_each(keep_arbitrary_maps_as_they_are)
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed YAML must be exactly what the code generates; run `crdgen` after a change.
    #[test]
    fn committed_manifests_match_the_code() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/crds");
        let generated = generated_manifests();
        for (name, contents) in &generated {
            let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(
                committed == *contents,
                "manifests/crds/{name} differs from the code: run `cargo run -p berth-crds --bin crdgen`"
            );
        }
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .expect("manifests/crds exists")
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut expected: Vec<String> = generated.into_iter().map(|(name, _)| name).collect();
        expected.sort();
        assert_eq!(
            on_disk, expected,
            "stale files in manifests/crds: run crdgen"
        );
    }

    /// Collects the paths of properties without a description (what `kubectl explain` shows).
    fn undocumented(schema: &serde_json::Value, path: &str, missing: &mut Vec<String>) {
        if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
            for (name, property) in properties {
                let here = format!("{path}.{name}");
                let documented = property
                    .get("description")
                    .and_then(|d| d.as_str())
                    .is_some_and(|d| !d.trim().is_empty());
                if !documented {
                    missing.push(here.clone());
                }
                undocumented(property, &here, missing);
            }
        }
        if let Some(items) = schema.get("items") {
            undocumented(items, &format!("{path}[]"), missing);
        }
    }

    #[test]
    fn every_field_is_documented_for_kubectl_explain() {
        let mut missing = Vec::new();
        for crd in all_crds() {
            let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
            let root = &schema["openAPIV3Schema"];
            undocumented(root, &crd.spec.names.kind, &mut missing);
        }
        assert!(
            missing.is_empty(),
            "fields without a doc comment: {missing:#?}"
        );
    }

    #[test]
    fn no_enum_in_any_crd_lists_null() {
        for crd in all_crds() {
            let yaml = render_manifest(&crd);
            assert!(
                !yaml.contains("- null"),
                "{} lists null in an enum",
                manifest_file_name(&crd)
            );
        }
    }

    #[test]
    fn every_kind_has_status_category_and_ready_column() {
        for crd in all_crds() {
            let name = manifest_file_name(&crd);
            let version = &crd.spec.versions[0];
            assert!(
                version
                    .subresources
                    .as_ref()
                    .and_then(|s| s.status.as_ref())
                    .is_some(),
                "{name}: status subresource"
            );
            assert_eq!(
                crd.spec.names.categories.as_deref(),
                Some(&["berth".to_string()][..]),
                "{name}: category"
            );
            assert!(
                crd.spec
                    .names
                    .short_names
                    .as_ref()
                    .is_some_and(|s| !s.is_empty()),
                "{name}: short name"
            );
            let columns = version
                .additional_printer_columns
                .as_deref()
                .unwrap_or_default();
            assert!(
                columns.iter().any(|c| c.name == "Ready"),
                "{name}: Ready column"
            );
        }
    }
}
