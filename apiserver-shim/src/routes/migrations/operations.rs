//! The ordinary REST operations a plan's steps name, and how cleanup undoes each: which
//! method and path, which of the step's input fields are path parameters. A step's `input`
//! is the operation's body, so the operation itself checks it.

use axum::http::Method;
use serde_json::{Map, Value, json};

/// One call of the REST API.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: Method,
    pub path: String,
    pub body: Option<Value>,
    /// The class-like name cleanup reports (`commandName`), e.g. `DeleteResource`.
    pub command_name: &'static str,
}

/// `(operationKey, method, path template, command name)` of every operation apply runs.
/// `{name}` placeholders are taken out of the input.
const APPLY: &[(&str, Method, &str, &str)] = &[
    (
        "projects.create",
        Method::POST,
        "/projects",
        "CreateProject",
    ),
    (
        "environments.create",
        Method::POST,
        "/environments",
        "CreateEnvironment",
    ),
    (
        "environments.set-variable",
        Method::POST,
        "/environments/{environmentId}/variables",
        "SetEnvironmentVariable",
    ),
    (
        "storage-volumes.create",
        Method::POST,
        "/storage-volumes",
        "CreateStorageVolume",
    ),
    (
        "resources.create",
        Method::POST,
        "/resources",
        "CreateResource",
    ),
    (
        "resources.set-variable",
        Method::POST,
        "/resources/{resourceId}/variables",
        "SetResourceVariable",
    ),
    (
        "resources.set-secret",
        Method::POST,
        "/resources/{resourceId}/secrets",
        "CreateResourceSecret",
    ),
    (
        "resources.attach-storage",
        Method::POST,
        "/resources/{resourceId}/storage-attachments",
        "AttachResourceStorage",
    ),
    (
        "domain-bindings.create",
        Method::POST,
        "/domain-bindings",
        "CreateDomainBinding",
    ),
    (
        "deployments.create",
        Method::POST,
        "/deployments",
        "CreateDeployment",
    ),
    (
        "dependency-resources.provision",
        Method::POST,
        "/dependency-resources/provision",
        "ProvisionDependencyResource",
    ),
    (
        "dependency-resources.import",
        Method::POST,
        "/dependency-resources/import",
        "ImportDependencyResource",
    ),
    (
        "resources.bind-dependency",
        Method::POST,
        "/resources/{resourceId}/dependency-bindings",
        "BindResourceDependency",
    ),
];

/// The call of an apply step, or why the operation is not one a plan may run.
pub fn apply_call(operation_key: &str, input: &Map<String, Value>) -> Result<Call, String> {
    let (_, method, template, command_name) = APPLY
        .iter()
        .find(|(key, ..)| *key == operation_key)
        .ok_or_else(|| format!("{operation_key} is not an operation a migration plan may run"))?;
    let mut body = input.clone();
    let path = fill(template, &mut body)?;
    Ok(Call {
        method: method.clone(),
        path,
        body: Some(Value::Object(body)),
        command_name,
    })
}

/// Replaces each `{name}` of `template` with `input[name]`, taken out of `input`.
fn fill(template: &str, input: &mut Map<String, Value>) -> Result<String, String> {
    let mut path = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let end = rest[start..]
            .find('}')
            .map(|e| start + e)
            .unwrap_or(rest.len());
        let name = &rest[start + 1..end];
        let value = input
            .remove(name)
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("the step's input has no {name}"))?;
        path.push_str(&rest[..start]);
        path.push_str(&encode_segment(&value));
        rest = &rest[(end + 1).min(rest.len())..];
    }
    path.push_str(rest);
    Ok(path)
}

/// Percent-encodes what may not appear in a path segment (keys and ids are plain, but a
/// plan is data).
fn encode_segment(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// What cleanup needs of a step: its resolved input and its receipt's outputs.
pub struct Undo<'a> {
    pub operation_key: &'a str,
    pub input: &'a Map<String, Value>,
    pub output: &'a Map<String, Value>,
    pub cleanup_input: Option<&'a Map<String, Value>>,
    /// A resource's slug, read before deleting it (the delete is confirmed by it).
    pub resource_slug: Option<String>,
}

impl Undo<'_> {
    /// A field of the receipt's output, else of the step's input.
    fn field(&self, name: &str) -> Result<String, String> {
        self.output
            .get(name)
            .or_else(|| self.input.get(name))
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .ok_or_else(|| format!("the receipt holds no {name}"))
    }

    fn extra(&self, name: &str) -> Option<Value> {
        self.cleanup_input.and_then(|c| c.get(name)).cloned()
    }
}

/// The calls that undo a step (`cleanup.operationKey`), in order.
pub fn cleanup_calls(undo: &Undo<'_>) -> Result<Vec<Call>, String> {
    let call = match undo.operation_key {
        "projects.archive" | "environments.archive" => archive(undo)?,
        "environments.unset-variable" => Call {
            method: Method::DELETE,
            path: format!(
                "/environments/{}/variables/{}",
                undo.segment("environmentId")?,
                undo.segment("key")?
            ),
            body: Some(json!({"exposure": undo.exposure(), "scope": "environment"})),
            command_name: "UnsetEnvironmentVariable",
        },
        "resources.unset-variable" | "resources.delete-secret" => unset_resource_entry(undo)?,
        "resources.delete" => resource_delete(undo)?,
        "dependency-resources.delete" | "resources.unbind-dependency" => dependency_undo(undo)?,
        "storage-volumes.delete"
        | "resources.detach-storage"
        | "domain-bindings.delete"
        | "deployments.cleanup-runtime" => delete_by_id(undo)?,
        other => return Err(format!("{other} is not a cleanup operation Berth knows")),
    };
    Ok(vec![call])
}

impl Undo<'_> {
    fn segment(&self, name: &str) -> Result<String, String> {
        self.field(name).map(|v| encode_segment(&v))
    }

    fn exposure(&self) -> Value {
        self.extra("exposure").unwrap_or_else(|| json!("runtime"))
    }
}

/// A project or environment is archived, not deleted (what else it holds is not the
/// migration's to remove).
fn archive(undo: &Undo<'_>) -> Result<Call, String> {
    Ok(match undo.operation_key {
        "projects.archive" => {
            let id = undo.field("projectId")?;
            Call {
                method: Method::POST,
                path: format!("/projects/{}/archive", encode_segment(&id)),
                body: Some(
                    json!({"confirmation": {"projectId": id}, "reason": "migration cleanup"}),
                ),
                command_name: "ArchiveProject",
            }
        }
        _ => Call {
            method: Method::POST,
            path: format!("/environments/{}/archive", undo.segment("environmentId")?),
            body: Some(json!({"reason": "migration cleanup"})),
            command_name: "ArchiveEnvironment",
        },
    })
}

/// A resource's variable or secret, by key and exposure.
fn unset_resource_entry(undo: &Undo<'_>) -> Result<Call, String> {
    let (collection, command_name) = match undo.operation_key {
        "resources.unset-variable" => ("variables", "UnsetResourceVariable"),
        _ => ("secrets", "DeleteResourceSecret"),
    };
    Ok(Call {
        method: Method::DELETE,
        path: format!(
            "/resources/{}/{collection}/{}",
            undo.segment("resourceId")?,
            undo.segment("key")?
        ),
        body: Some(json!({"exposure": undo.exposure()})),
        command_name,
    })
}

/// The removals confirmed by repeating the id they name.
fn delete_by_id(undo: &Undo<'_>) -> Result<Call, String> {
    let call = |method, path: String, body, command_name| Call {
        method,
        path,
        body,
        command_name,
    };
    Ok(match undo.operation_key {
        "storage-volumes.delete" => call(
            Method::DELETE,
            format!("/storage-volumes/{}", undo.segment("storageVolumeId")?),
            None,
            "DeleteStorageVolume",
        ),
        "resources.detach-storage" => call(
            Method::DELETE,
            format!(
                "/resources/{}/storage-attachments/{}",
                undo.segment("resourceId")?,
                undo.segment("attachmentId")?
            ),
            None,
            "DetachResourceStorage",
        ),
        "domain-bindings.delete" => {
            let id = undo.field("domainBindingId")?;
            call(
                Method::DELETE,
                format!("/domain-bindings/{}", encode_segment(&id)),
                Some(json!({"confirmation": {"domainBindingId": id}})),
                "DeleteDomainBinding",
            )
        }
        _ => {
            let id = undo.field("deploymentId")?;
            call(
                Method::POST,
                format!("/deployments/{}/cleanup-runtime", encode_segment(&id)),
                Some(json!({"confirm": id})),
                "CleanupDeploymentRuntime",
            )
        }
    })
}

/// A binding is removed by its target name; a provisioned dependency is deleted keeping its
/// data volume (the ordinary delete without `deleteDataConfirmation`).
fn dependency_undo(undo: &Undo<'_>) -> Result<Call, String> {
    Ok(match undo.operation_key {
        "resources.unbind-dependency" => Call {
            method: Method::DELETE,
            path: format!(
                "/resources/{}/dependency-bindings/{}",
                undo.segment("resourceId")?,
                undo.segment("targetName")?
            ),
            body: Some(json!({})),
            command_name: "UnbindResourceDependency",
        },
        _ => Call {
            method: Method::DELETE,
            path: format!(
                "/dependency-resources/{}",
                undo.segment("dependencyResourceId")?
            ),
            body: Some(json!({})),
            command_name: "DeleteDependencyResource",
        },
    })
}

fn resource_delete(undo: &Undo<'_>) -> Result<Call, String> {
    let id = undo.field("resourceId")?;
    let slug = undo
        .resource_slug
        .clone()
        .ok_or_else(|| "the resource's slug could not be read".to_string())?;
    Ok(Call {
        method: Method::DELETE,
        path: format!("/resources/{}", encode_segment(&id)),
        body: Some(json!({"confirmation": {"resourceSlug": slug}})),
        command_name: "DeleteResource",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn path_parameters_leave_the_body() {
        let input = map(json!({"resourceId": "res-1", "key": "A", "value": "b"}));
        let call = apply_call("resources.set-variable", &input).unwrap();
        assert_eq!(call.path, "/resources/res-1/variables");
        assert_eq!(call.body, Some(json!({"key": "A", "value": "b"})));
    }

    #[test]
    fn unknown_operations_and_missing_parameters_are_refused() {
        assert!(apply_call("servers.delete", &Map::new()).is_err());
        assert!(apply_call("resources.set-variable", &Map::new()).is_err());
    }

    #[test]
    fn path_segments_are_encoded() {
        let input = map(json!({"resourceId": "../servers"}));
        let call = apply_call("resources.attach-storage", &input).unwrap();
        assert_eq!(call.path, "/resources/..%2Fservers/storage-attachments");
    }

    #[test]
    fn cleanup_reads_ids_from_the_receipt() {
        let output = map(json!({"domainBindingId": "dom-1"}));
        let undo = Undo {
            operation_key: "domain-bindings.delete",
            input: &Map::new(),
            output: &output,
            cleanup_input: None,
            resource_slug: None,
        };
        let calls = cleanup_calls(&undo).unwrap();
        assert_eq!(calls[0].path, "/domain-bindings/dom-1");
        assert_eq!(calls[0].method, Method::DELETE);
    }

    #[test]
    fn every_cleanup_operation_has_its_call() {
        let output = map(json!({
            "projectId": "prj-1", "environmentId": "env-1", "storageVolumeId": "vol-1",
            "resourceId": "res-1", "attachmentId": "att-1", "domainBindingId": "dom-1",
            "deploymentId": "dep-1", "dependencyResourceId": "dep-pg",
        }));
        let input = map(json!({"key": "API_KEY", "targetName": "DATABASE_URL"}));
        let cases = [
            ("projects.archive", "POST /projects/prj-1/archive"),
            ("environments.archive", "POST /environments/env-1/archive"),
            (
                "environments.unset-variable",
                "DELETE /environments/env-1/variables/API_KEY",
            ),
            ("storage-volumes.delete", "DELETE /storage-volumes/vol-1"),
            ("resources.delete", "DELETE /resources/res-1"),
            (
                "resources.unset-variable",
                "DELETE /resources/res-1/variables/API_KEY",
            ),
            (
                "resources.delete-secret",
                "DELETE /resources/res-1/secrets/API_KEY",
            ),
            (
                "resources.detach-storage",
                "DELETE /resources/res-1/storage-attachments/att-1",
            ),
            ("domain-bindings.delete", "DELETE /domain-bindings/dom-1"),
            (
                "deployments.cleanup-runtime",
                "POST /deployments/dep-1/cleanup-runtime",
            ),
            (
                "resources.unbind-dependency",
                "DELETE /resources/res-1/dependency-bindings/DATABASE_URL",
            ),
            (
                "dependency-resources.delete",
                "DELETE /dependency-resources/dep-pg",
            ),
        ];
        for (operation_key, expected) in cases {
            let undo = Undo {
                operation_key,
                input: &input,
                output: &output,
                cleanup_input: None,
                resource_slug: Some("web".into()),
            };
            let calls = cleanup_calls(&undo).unwrap();
            assert_eq!(format!("{} {}", calls[0].method, calls[0].path), expected);
        }
        let unknown = Undo {
            operation_key: "servers.delete",
            input: &input,
            output: &output,
            cleanup_input: None,
            resource_slug: None,
        };
        assert!(cleanup_calls(&unknown).is_err());
    }

    /// The environment's secret step of a plan runs the environment variable route with
    /// `isSecret`, its value filled in memory only; cleanup unsets the same key and exposure.
    #[test]
    fn an_environment_secret_runs_the_environment_variable_route() {
        let bundle = json!({
            "apiVersion": "appaloft.io/migration/v1", "kind": "MigrationBundle",
            "metadata": {"name": "shop", "source": {"provider": "Railway"}},
            "spec": {
                "project": {"name": "Shop"},
                "environment": {"name": "production", "kind": "production"},
                "target": {"deploymentTargetId": "srv-1"},
                "resources": [{"ref": "web", "name": "Web", "kind": "worker",
                    "source": {"kind": "docker-image", "locator": "ghcr.io/acme/web:1"}}],
                "variables": [{"key": "SENTRY_DSN", "secretRef": "k8s://sentry#dsn",
                    "exposure": "build-time"}]
            }
        });
        let bundle = berth_migrate::plan::parse_bundle(&bundle).unwrap();
        let plan = berth_migrate::plan::plan(bundle).unwrap();
        let step = plan
            .steps
            .iter()
            .find(|s| s.id == "environment-secret:SENTRY_DSN:build-time")
            .unwrap();
        let mut input = step.input.clone();
        input.insert("environmentId".into(), json!("env-1"));
        input.insert("value".into(), json!("resolved-at-apply"));
        let call = apply_call(&step.operation_key, &input).unwrap();
        assert_eq!(
            (call.method.clone(), call.path.as_str(), call.command_name),
            (
                Method::POST,
                "/environments/env-1/variables",
                "SetEnvironmentVariable"
            )
        );
        assert_eq!(
            call.body,
            Some(json!({"key": "SENTRY_DSN", "value": "resolved-at-apply",
                "exposure": "build-time", "kind": "secret", "scope": "environment",
                "isSecret": true}))
        );
        let cleanup = step.cleanup.as_ref().unwrap();
        let undo = Undo {
            operation_key: &cleanup.operation_key,
            input: &input,
            output: &Map::new(),
            cleanup_input: cleanup.input.as_ref(),
            resource_slug: None,
        };
        let calls = cleanup_calls(&undo).unwrap();
        assert_eq!(
            format!("{} {}", calls[0].method, calls[0].path),
            "DELETE /environments/env-1/variables/SENTRY_DSN"
        );
        assert_eq!(
            calls[0].body,
            Some(json!({"exposure": "build-time", "scope": "environment"}))
        );
    }
}
