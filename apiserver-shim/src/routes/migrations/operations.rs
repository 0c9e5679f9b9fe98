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
    let call = |method: Method, path: String, body: Option<Value>, command_name| Call {
        method,
        path,
        body,
        command_name,
    };
    let seg = |name: &str| undo.field(name).map(|v| encode_segment(&v));
    let exposure = || undo.extra("exposure").unwrap_or_else(|| json!("runtime"));
    Ok(match undo.operation_key {
        "projects.archive" => {
            let id = undo.field("projectId")?;
            vec![call(
                Method::POST,
                format!("/projects/{}/archive", encode_segment(&id)),
                Some(json!({"confirmation": {"projectId": id}, "reason": "migration cleanup"})),
                "ArchiveProject",
            )]
        }
        "environments.archive" => vec![call(
            Method::POST,
            format!("/environments/{}/archive", seg("environmentId")?),
            Some(json!({"reason": "migration cleanup"})),
            "ArchiveEnvironment",
        )],
        "environments.unset-variable" => vec![call(
            Method::DELETE,
            format!(
                "/environments/{}/variables/{}",
                seg("environmentId")?,
                seg("key")?
            ),
            Some(json!({"exposure": exposure(), "scope": "environment"})),
            "UnsetEnvironmentVariable",
        )],
        "storage-volumes.delete" => {
            let id = undo.field("storageVolumeId")?;
            vec![call(
                Method::DELETE,
                format!("/storage-volumes/{}", encode_segment(&id)),
                None,
                "DeleteStorageVolume",
            )]
        }
        "resources.delete" => resource_delete(undo)?,
        "resources.unset-variable" => vec![call(
            Method::DELETE,
            format!(
                "/resources/{}/variables/{}",
                seg("resourceId")?,
                seg("key")?
            ),
            Some(json!({"exposure": exposure()})),
            "UnsetResourceVariable",
        )],
        "resources.delete-secret" => vec![call(
            Method::DELETE,
            format!("/resources/{}/secrets/{}", seg("resourceId")?, seg("key")?),
            Some(json!({"exposure": exposure()})),
            "DeleteResourceSecret",
        )],
        "resources.detach-storage" => vec![call(
            Method::DELETE,
            format!(
                "/resources/{}/storage-attachments/{}",
                seg("resourceId")?,
                seg("attachmentId")?
            ),
            None,
            "DetachResourceStorage",
        )],
        "domain-bindings.delete" => {
            let id = undo.field("domainBindingId")?;
            vec![call(
                Method::DELETE,
                format!("/domain-bindings/{}", encode_segment(&id)),
                Some(json!({"confirmation": {"domainBindingId": id}})),
                "DeleteDomainBinding",
            )]
        }
        "deployments.cleanup-runtime" => {
            let id = undo.field("deploymentId")?;
            vec![call(
                Method::POST,
                format!("/deployments/{}/cleanup-runtime", encode_segment(&id)),
                Some(json!({"confirm": id})),
                "CleanupDeploymentRuntime",
            )]
        }
        other => return Err(format!("{other} is not a cleanup operation Berth knows")),
    })
}

fn resource_delete(undo: &Undo<'_>) -> Result<Vec<Call>, String> {
    let id = undo.field("resourceId")?;
    let slug = undo
        .resource_slug
        .clone()
        .ok_or_else(|| "the resource's slug could not be read".to_string())?;
    Ok(vec![Call {
        method: Method::DELETE,
        path: format!("/resources/{}", encode_segment(&id)),
        body: Some(json!({"confirmation": {"resourceSlug": slug}})),
        command_name: "DeleteResource",
    }])
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
}
