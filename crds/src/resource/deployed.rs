//! What a Deployment records of the spec it was made from, so the Resource reconciler can say
//! which declared changes are not deployed yet (`Deployed` condition, `status.deployedState`).
//!
//! Each attempt carries, in the annotation [`SPEC_DIGESTS_ANNOTATION`], a short SHA-256 of every
//! top-level spec field that takes a new attempt to reach the server (the table
//! `berth_vocabulary::deployed_spec::SPEC_FIELDS`). Digests, not values: an annotation is read
//! by anyone who can list Deployments, and the spec may hold variable values.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use berth_vocabulary::deployed_spec::{
    CONFIGURATION, DeployedState, FieldEffect, SPEC_FIELDS, SpecField, effect_of,
};

use super::{Resource, ResourceSpec};

/// Annotation of a Deployment: JSON `{field: digest}` of the Resource spec it was made from.
pub const SPEC_DIGESTS_ANNOTATION: &str = "berth.dev/resource-spec-digests";

/// Condition type of a Resource: whether the serving deployment runs the declared spec.
pub const DEPLOYED: &str = "Deployed";

/// Reasons of a Resource's `Deployed` condition.
pub mod reason {
    /// `True`: the serving deployment was made from the declared spec (changes to fields that
    /// apply at once aside).
    pub const SPEC_DEPLOYED: &str = "SpecDeployed";
    /// `False`: fields that need a new attempt changed since the serving deployment was made.
    pub const CHANGES_NOT_DEPLOYED: &str = "ChangesNotDeployed";
    /// `False`: no deployment has succeeded yet.
    pub const NOT_DEPLOYED: &str = "NotDeployed";
    /// `Unknown`: the serving deployment predates spec digests and was made from another
    /// generation, so what changed cannot be told.
    pub const DEPLOYED_SPEC_UNKNOWN: &str = "DeployedSpecUnknown";
}

/// The digest of every `NewAttempt` field of `spec` as an attempt to `server_id` and
/// `destination_id` deploys it. `slug` is the generated host's first label (the declared slug,
/// else derived from the name), so renaming a resource without a slug counts as a new host.
pub fn spec_digests(
    spec: &ResourceSpec,
    host_slug: &str,
    server_id: &str,
    destination_id: Option<&str>,
) -> BTreeMap<String, String> {
    let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut value {
        fields.insert("slug".into(), Value::from(host_slug));
        fields.insert("serverId".into(), Value::from(server_id));
        match destination_id {
            Some(destination) => fields.insert("destinationId".into(), Value::from(destination)),
            None => fields.remove("destinationId"),
        };
    }
    SPEC_FIELDS
        .iter()
        .filter(|f| f.effect == FieldEffect::NewAttempt)
        .map(|f| {
            let field = value.get(f.field).unwrap_or(&Value::Null);
            (f.field.to_string(), digest(field))
        })
        .collect()
}

/// The digests of `resource`'s spec as it is now, deployed where it declares.
pub fn current_digests(resource: &Resource) -> BTreeMap<String, String> {
    spec_digests(
        &resource.spec,
        &resource.host_slug(),
        resource.spec.server_id.as_deref().unwrap_or_default(),
        resource.spec.destination_id.as_deref(),
    )
}

/// The digests a Deployment recorded, if it recorded any.
pub fn recorded_digests(
    annotations: &BTreeMap<String, String>,
) -> Option<BTreeMap<String, String>> {
    serde_json::from_str(annotations.get(SPEC_DIGESTS_ANNOTATION)?).ok()
}

/// The `NewAttempt` fields whose digest differs between what a deployment recorded and the spec
/// now, in table order. A field the deployment recorded nothing for (a field added to the table
/// later) is not compared.
pub fn undeployed_fields(
    recorded: &BTreeMap<String, String>,
    current: &BTreeMap<String, String>,
) -> Vec<String> {
    SPEC_FIELDS
        .iter()
        .filter(|f| f.effect == FieldEffect::NewAttempt)
        .filter_map(|f| Some((f.field, recorded.get(f.field)?, current.get(f.field)?)))
        .filter(|(_, then, now)| then != now)
        .map(|(field, _, _)| field.to_string())
        .collect()
}

/// 16 hex digits of SHA-256 over the field's JSON with object keys sorted, so the digest does
/// not depend on how a map happened to be ordered.
fn digest(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                canonical(&fields[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;

    fn resource(spec: serde_json::Value) -> Resource {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
            "metadata": {"name": "web", "namespace": "org-a", "generation": 1},
            "spec": spec,
        }))
        .unwrap()
    }

    fn base() -> serde_json::Value {
        serde_json::json!({
            "projectId": "p", "environmentId": "e", "serverId": "srv", "name": "Web",
            "kind": "application",
            "source": {"kind": "docker-image", "locator": "berth/sample-app:1"},
            "runtimeProfile": {"startCommand": "serve v1"},
            "networkProfile": {"internalPort": 8080},
        })
    }

    /// The table names every top-level field of the spec, no more: a new field must be put in
    /// one class or the other.
    #[test]
    fn the_table_covers_every_spec_field() {
        let mut generator = schemars::SchemaGenerator::default();
        let schema = serde_json::to_value(ResourceSpec::json_schema(&mut generator)).unwrap();
        let mut declared: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        declared.sort_unstable();
        let mut listed: Vec<&str> = SPEC_FIELDS.iter().map(|f| f.field).collect();
        listed.sort_unstable();
        assert_eq!(listed, declared);
    }

    /// The README's table of fields is this table: same fields, same order, same class.
    #[test]
    fn the_readme_lists_every_field_as_the_code_classes_it() {
        let readme = include_str!("../../../README.md");
        let section = readme
            .split("### Is the declared spec deployed?")
            .nth(1)
            .expect("README section \"Is the declared spec deployed?\"");
        let section = section.split("\n### ").next().unwrap_or_default();
        let listed: Vec<(String, String)> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| {
                let (field, rest) = rest.split_once('`')?;
                let class = rest.split('|').nth(1)?.trim();
                Some((field.to_string(), class.to_string()))
            })
            .filter(|(field, _)| field != CONFIGURATION)
            .collect();
        let table: Vec<(String, String)> = SPEC_FIELDS
            .iter()
            .map(|f| {
                let class = match f.effect {
                    FieldEffect::NewAttempt => "new attempt",
                    FieldEffect::AtOnce => "at once",
                };
                (f.field.to_string(), class.to_string())
            })
            .collect();
        assert_eq!(listed, table);
    }

    #[test]
    fn a_changed_start_command_is_a_runtime_profile_change_a_description_none() {
        let before = resource(base());
        let recorded = current_digests(&before);
        let mut spec = base();
        spec["description"] = "the shop".into();
        spec["autoDeploy"] = serde_json::json!({"enabled": false, "refs": ["x"]});
        spec["runtime"] = serde_json::json!({"desiredState": "stopped"});
        assert_eq!(
            undeployed_fields(&recorded, &current_digests(&resource(spec.clone()))),
            Vec::<String>::new()
        );
        spec["runtimeProfile"]["startCommand"] = "serve v2".into();
        spec["variables"] = serde_json::json!([{"key": "A", "value": "1"}]);
        assert_eq!(
            undeployed_fields(&recorded, &current_digests(&resource(spec))),
            ["runtimeProfile", "variables"]
        );
    }

    #[test]
    fn a_rename_counts_as_a_new_host_only_without_a_slug() {
        let recorded = current_digests(&resource(base()));
        let mut renamed = base();
        renamed["name"] = "Shop".into();
        assert_eq!(
            undeployed_fields(&recorded, &current_digests(&resource(renamed.clone()))),
            ["slug"]
        );
        let mut with_slug = base();
        with_slug["slug"] = "web".into();
        let recorded = current_digests(&resource(with_slug.clone()));
        with_slug["name"] = "Shop".into();
        assert!(undeployed_fields(&recorded, &current_digests(&resource(with_slug))).is_empty());
    }

    #[test]
    fn explicit_defaults_and_key_order_do_not_count_as_changes() {
        let recorded = current_digests(&resource(base()));
        let mut spec = base();
        spec["runtimeProfile"]["restartPolicy"] = "unless-stopped".into();
        spec["autoDeploy"] = serde_json::json!({"enabled": false});
        assert!(undeployed_fields(&recorded, &current_digests(&resource(spec))).is_empty());
        let a = digest(&serde_json::json!({"a": 1, "b": [2, {"c": 3, "d": 4}]}));
        let b = digest(&serde_json::json!({"b": [2, {"d": 4, "c": 3}], "a": 1}));
        assert_eq!(a, b);
    }

    #[test]
    fn a_deployment_to_another_server_differs_and_unrecorded_fields_are_not_compared() {
        let current = current_digests(&resource(base()));
        let elsewhere = spec_digests(&resource(base()).spec, "web", "srv-2", None);
        assert_eq!(undeployed_fields(&elsewhere, &current), ["serverId"]);
        let mut old = current.clone();
        old.remove("runtimeProfile");
        let mut spec = base();
        spec["runtimeProfile"]["startCommand"] = "serve v2".into();
        assert!(undeployed_fields(&old, &current_digests(&resource(spec))).is_empty());
        let annotations = BTreeMap::from([(
            SPEC_DIGESTS_ANNOTATION.to_string(),
            serde_json::to_string(&current).unwrap(),
        )]);
        assert_eq!(recorded_digests(&annotations), Some(current));
        assert_eq!(recorded_digests(&BTreeMap::new()), None);
    }
}
