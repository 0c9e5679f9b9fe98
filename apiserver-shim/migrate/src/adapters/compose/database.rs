//! A service running PostgreSQL or Redis from an image (no build) becomes a dependency Berth
//! provisions from that image, with credentials and a data volume of its own; the other
//! services' variables holding its URL (its service name as the host) become bindings, so
//! Berth injects the managed database's URL instead. Its data is not copied.

use berth_api::migrations::{BundleBinding, BundleDependency};
use serde_json::Value;

use super::env::Vars;
use crate::adapters::draft::{Draft, database_kind, list};
use crate::adapters::fields::Obj;

/// The kinds Berth provisions itself.
const MANAGED: &[&str] = &["postgres", "redis"];
/// URL schemes a binding replaces.
const SCHEMES: &[&str] = &["postgres", "postgresql", "redis", "rediss"];

/// A service that became a dependency: its name (the host other services reach it by) and
/// its index among the draft's dependencies.
pub(super) struct Database {
    service: String,
    index: usize,
}

/// The kind Berth provisions a service as: an image of PostgreSQL or Redis, nothing built.
pub(super) fn managed_kind(obj: &Obj) -> Option<&'static str> {
    if obj.peek("build").is_some() {
        return None;
    }
    let image = obj.peek("image")?.as_str()?;
    database_kind(image).filter(|kind| MANAGED.contains(kind))
}

/// Service `name` as a dependency of `kind`; what else it sets is Berth's to choose (a warning
/// names the keys, never a value).
pub(super) fn translate(name: &str, obj: &Obj, kind: &str, draft: &mut Draft) -> Database {
    let image = obj
        .peek("image")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reference = draft.dependency_refs.allocate(name, "dep");
    let dropped: Vec<String> = obj
        .entries()
        .filter(|(key, value)| key.as_str() != "image" && !value.is_null())
        .map(|(key, _)| key.clone())
        .collect();
    let not_migrated = match dropped.is_empty() {
        true => String::new(),
        false => format!(" ({} not migrated)", list(&dropped)),
    };
    draft.warn(format!(
        "{}: {}: {name} becomes the dependency {reference}, a {kind} Berth provisions from \
         {image} with credentials and a data volume of its own{not_migrated}; its data is not \
         copied.",
        obj.file, obj.path
    ));
    draft.dependencies.push(BundleDependency::provisioned(
        reference,
        name,
        kind,
        format!("compose-{kind}"),
        Some(image.to_string()),
    ));
    Database {
        service: name.to_string(),
        index: draft.dependencies.len() - 1,
    }
}

/// Takes out of `vars` each variable holding the URL of one of `databases`, binding it to
/// resource `reference` under the same key.
pub(super) fn bind(
    obj: &Obj,
    vars: &mut Vars,
    reference: &str,
    databases: &[Database],
    draft: &mut Draft,
) {
    let mut bound = Vec::new();
    vars.retain(|(key, value)| {
        let host = value.as_deref().and_then(url_host);
        let Some(database) = host.and_then(|h| databases.iter().find(|d| d.service == h)) else {
            return true;
        };
        draft.dependencies[database.index]
            .bindings
            .push(BundleBinding {
                resource_ref: reference.to_string(),
                target_name: key.clone(),
                scope: "runtime-only".into(),
                injection_mode: "env".into(),
            });
        bound.push(key.clone());
        false
    });
    if !bound.is_empty() {
        draft.warn(format!(
            "{}: {}: {} become dependency bindings: Berth injects the managed database's own URL \
             (its credentials, not the ones written here).",
            obj.file,
            obj.path,
            list(&bound)
        ));
    }
}

/// A dependency no service's variable refers to gets no binding: say how to add one.
pub(super) fn warn_unbound(databases: &[Database], draft: &mut Draft) {
    for database in databases {
        let dependency = &draft.dependencies[database.index];
        if dependency.bindings.is_empty() {
            let message = format!(
                "No service holds a URL of {} in a variable: its dependency {} is bound to no \
                 resource; bind it after apply with `berth db bind`.",
                database.service, dependency.reference
            );
            draft.warn(message);
        }
    }
}

/// The host of a PostgreSQL or Redis URL (`postgres://user:pw@db:5432/app` → `db`).
fn url_host(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once("://")?;
    if !SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    host.split(':').next().filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::url_host;

    #[test]
    fn the_host_of_a_database_url() {
        assert_eq!(url_host("postgres://u:p@db:5432/app"), Some("db"));
        assert_eq!(url_host("postgresql://db/app?sslmode=disable"), Some("db"));
        assert_eq!(url_host("redis://:${PW}@cache:6379/0"), Some("cache"));
        assert_eq!(url_host("rediss://cache"), Some("cache"));
        assert_eq!(url_host("http://db:80/"), None);
        assert_eq!(url_host("db"), None);
    }
}
