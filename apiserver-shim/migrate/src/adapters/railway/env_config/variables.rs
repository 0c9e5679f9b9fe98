//! Railway variables: plain values copy, secret-looking ones become `env://KEY` references,
//! `${{Service.VAR}}` of a database service becomes a dependency binding, other references
//! cannot be resolved outside Railway (warnings naming the keys, never the values).

use berth_api::migrations::{BundleBinding, BundleDependency};
use berth_api::validate::FieldError;
use serde_json::Value;

use crate::adapters::draft::{Draft, database_kind, env_ref, is_secret, list, plain, secret};
use crate::adapters::fields::Obj;

/// What a variable reference may point at.
pub(crate) struct Service {
    pub name: String,
    pub database: Option<&'static str>,
}

impl Service {
    pub(crate) fn describe(id: &str, entry: &Obj) -> Self {
        let name = entry.peek("name").and_then(Value::as_str).unwrap_or(id);
        let image = entry
            .peek("source")
            .and_then(|source| source.get("image"))
            .and_then(Value::as_str)
            .unwrap_or("");
        Self {
            name: name.to_string(),
            database: database_kind(&format!("{name} {image}")),
        }
    }
}

/// Keys by how they were migrated, for one warning each.
#[derive(Default)]
struct Report {
    secrets: Vec<String>,
    valueless: Vec<String>,
    references: Vec<String>,
}

/// `variables` of a service (`resource` set) or `sharedVariables` (environment-level).
pub(crate) fn translate(
    obj: Obj,
    resource: Option<&str>,
    catalogue: &[Service],
    draft: &mut Draft,
) -> Result<(), FieldError> {
    let mut report = Report::default();
    for (key, raw) in obj.entries() {
        let value = value_of(&obj, key, raw, draft)?;
        let references = references(value.unwrap_or(""));
        if let Some(value) = value.filter(|_| references.is_empty()) {
            if is_secret(key, value) {
                report.secrets.push(key.clone());
                draft.variables.push(secret(key, resource));
            } else {
                draft.variables.push(plain(key, value, resource));
            }
        } else if value.is_none() {
            report.valueless.push(key.clone());
            draft.variables.push(secret(key, resource));
        } else if !bind(&obj, key, value.unwrap_or(""), resource, catalogue, draft) {
            report.references.push(key.clone());
        }
    }
    report.emit(&obj, draft);
    Ok(())
}

/// `{value}` (or `defaultValue`), or a bare string.
fn value_of<'a>(
    obj: &Obj<'a>,
    key: &str,
    raw: &'a Value,
    draft: &mut Draft,
) -> Result<Option<&'a str>, FieldError> {
    match raw {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(text)),
        Value::Object(_) => {
            let mut entry = Obj::new(obj.file, &obj.child(key), raw)?;
            let value = entry.str("value")?;
            let fallback = entry.str("defaultValue")?;
            entry.str("description")?;
            entry.bool("isOptional")?;
            entry.warn_unread(draft);
            Ok(value.or(fallback))
        }
        _ => Err(obj.wrong(key, "an object with `value`")),
    }
}

/// The `NAMESPACE.VAR` inside each `${{ … }}`.
fn references(value: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${{") {
        let after = &rest[start + 3..];
        let Some(end) = after.find("}}") else { break };
        found.push(after[..end].trim());
        rest = &after[end + 2..];
    }
    found
}

/// A value that is exactly `${{<database service>.VAR}}` on a service → a binding: of the
/// managed dependency of a PostgreSQL or Redis, else of an imported-external dependency (the
/// URL supplied at apply as `env://<SERVICE>_<VAR>`).
fn bind(
    obj: &Obj,
    key: &str,
    value: &str,
    resource: Option<&str>,
    catalogue: &[Service],
    draft: &mut Draft,
) -> bool {
    let refs = references(value);
    let exact = refs.len() == 1 && value.trim().starts_with("${{") && value.trim().ends_with("}}");
    let Some((namespace, var)) = refs.first().and_then(|inner| inner.split_once('.')) else {
        return false;
    };
    let service = catalogue
        .iter()
        .find(|service| service.name.eq_ignore_ascii_case(namespace.trim()));
    let (Some(resource), Some(service), true) = (resource, service, exact) else {
        return false;
    };
    let Some(kind) = service.database else {
        return false;
    };
    if MANAGED.contains(&kind) {
        return bind_managed(&service.name, var.trim(), resource, key, draft);
    }
    let connection = env_ref(&format!("{}_{}", service.name, var.trim()));
    let index = match draft
        .dependencies
        .iter()
        .position(|dependency| dependency.connection_secret_ref.as_deref() == Some(&connection))
    {
        Some(index) => index,
        None => new_dependency(obj, &service.name, kind, &connection, draft),
    };
    draft.dependencies[index].bindings.push(BundleBinding {
        resource_ref: resource.to_string(),
        target_name: key.to_string(),
        scope: "runtime-only".into(),
        injection_mode: "env".into(),
    });
    true
}

/// The kinds Berth provisions itself: a Railway service of one becomes a managed dependency.
pub(crate) const MANAGED: &[&str] = &["postgres", "redis"];

/// A service Berth provisions as a dependency: its name and kind.
pub(crate) fn managed_kind(service: &Service) -> Option<&'static str> {
    service.database.filter(|kind| MANAGED.contains(kind))
}

/// Service `name` (a PostgreSQL or Redis) as a dependency Berth provisions, empty, from its
/// default image (Railway's database images start their own way).
pub(crate) fn managed_dependency(obj: &Obj, name: &str, kind: &str, draft: &mut Draft) {
    let reference = draft.dependency_refs.allocate(name, "dep");
    draft.warn(format!(
        "{}: {} ({name}) becomes the dependency {reference}, a {kind} Berth provisions with its \
         own image, credentials and data volume (its variables and volume mounts are not \
         migrated); its data is not copied.",
        obj.file, obj.path
    ));
    draft.dependencies.push(BundleDependency::provisioned(
        reference,
        name,
        kind,
        format!("railway-{kind}"),
        None,
    ));
}

/// `${{<managed database>.<…URL>}}` → a binding of its managed dependency (Berth's URL); any
/// other variable of it (a host, a user) has no equivalent.
fn bind_managed(service: &str, var: &str, resource: &str, key: &str, draft: &mut Draft) -> bool {
    let dependency = draft
        .dependencies
        .iter_mut()
        .find(|d| d.name == service && d.connection_secret_ref.is_none());
    let (true, Some(dependency)) = (var.ends_with("URL"), dependency) else {
        return false;
    };
    dependency.bindings.push(BundleBinding {
        resource_ref: resource.to_string(),
        target_name: key.to_string(),
        scope: "runtime-only".into(),
        injection_mode: "env".into(),
    });
    true
}

fn new_dependency(obj: &Obj, name: &str, kind: &str, connection: &str, draft: &mut Draft) -> usize {
    let reference = draft.dependency_refs.allocate(name, "dep");
    draft.warn(format!(
        "{}: {}: references to {name} become the dependency {reference}, imported from the \
         existing Railway database: supply its connection URL at apply as {connection}; its data \
         is not copied.",
        obj.file, obj.path
    ));
    draft.dependencies.push(BundleDependency {
        reference,
        name: name.to_string(),
        kind: kind.to_string(),
        source_mode: "imported-external".into(),
        provider_key: format!("railway-{kind}"),
        connection_secret_ref: Some(connection.to_string()),
        image: None,
        bindings: Vec::new(),
    });
    draft.dependencies.len() - 1
}

impl Report {
    fn emit(self, obj: &Obj, draft: &mut Draft) {
        let at = format!("{}: {}", obj.file, obj.path);
        if !self.secrets.is_empty() {
            draft.warn(format!(
                "{at}: secret-looking {}: values not copied; each becomes \
                 env://<KEY>, supplied at apply from your environment.",
                list(&self.secrets)
            ));
        }
        if !self.valueless.is_empty() {
            draft.warn(format!(
                "{at}: {} have no value in the export; each becomes env://<KEY>, supplied at apply.",
                list(&self.valueless)
            ));
        }
        if !self.references.is_empty() {
            draft.warn(format!(
                "{at}: {} reference Railway variables (${{{{…}}}}) that do not exist outside \
                 Railway and are not migrated; set them on Berth by hand.",
                list(&self.references)
            ));
        }
    }
}
