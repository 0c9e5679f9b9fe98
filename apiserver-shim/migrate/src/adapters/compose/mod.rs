//! Docker Compose → bundle: one YAML file with top-level `services:` (any name), plus the
//! files its services name in `env_file`. Each service becomes a resource (a PostgreSQL or Redis
//! from an image becomes a managed dependency, see `database`); what Compose can
//! say and a Berth resource cannot is a warning, or a blocker when dropping it would change
//! how the app runs (replicas, host networking, privileges, bind mounts, several ports).

use berth_api::migrations::MigrationBundle;
use berth_api::validate::FieldError;
use serde_json::Value;

use super::draft::{Draft, file_error};
use super::fields::Obj;
use super::{Defaults, Files, base_name};

mod database;
mod env;
mod service;
#[cfg(test)]
mod tests;

/// Translates a Compose file (and the env files it references).
pub fn translate(files: &Files, defaults: &Defaults) -> Result<MigrationBundle, FieldError> {
    let mut compose: Option<(&str, Value)> = None;
    let mut others = Vec::new();
    for (name, content) in files {
        match parse(content) {
            Some(value) if value.get("services").is_some_and(Value::is_object) => {
                if compose.is_some() {
                    return Err(file_error(
                        name,
                        "send one Compose file: merge overrides first with `docker compose config`",
                    ));
                }
                compose = Some((name, value));
            }
            _ => others.push(name.as_str()),
        }
    }
    let Some((file, value)) = compose else {
        let name = others.first().copied().unwrap_or("");
        return Err(file_error(
            name,
            format!(
                "{name} is not a Compose file: expected YAML with a top-level `services:` mapping"
            ),
        ));
    };
    let mut draft = Draft::default();
    let mut used = Vec::new();
    let mut top = Obj::new(file, "", &value)?;
    draft.name = top.str("name")?.map(str::to_string);
    let services = top
        .obj("services")?
        .map(|s| s.members())
        .transpose()?
        .unwrap_or_default();
    // Databases first: a service may hold the URL of one declared after it.
    let (databases, services): (Vec<_>, Vec<_>) = services
        .into_iter()
        .partition(|(_, obj)| database::managed_kind(obj).is_some());
    let databases: Vec<database::Database> = databases
        .iter()
        .filter_map(|(name, obj)| {
            let kind = database::managed_kind(obj)?;
            Some(database::translate(name, obj, kind, &mut draft))
        })
        .collect();
    for (name, obj) in services {
        let context = service::Context {
            files,
            databases: &databases,
        };
        service::translate(name, obj, &context, &mut used, &mut draft)?;
    }
    database::warn_unbound(&databases, &mut draft);
    top_level(&mut top, &mut draft)?;
    if let Some(unused) = others.iter().find(|name| !used.contains(&name.to_string())) {
        return Err(file_error(
            unused,
            format!(
                "{unused} is neither a Compose file (YAML with `services:`) nor an env_file a service names"
            ),
        ));
    }
    draft.finish("compose", "compose", defaults)
}

/// YAML (merge keys applied) as JSON; `None` if it is not YAML.
fn parse(content: &str) -> Option<Value> {
    let mut yaml: serde_yaml::Value = serde_yaml::from_str(content).ok()?;
    yaml.apply_merge().ok()?;
    serde_json::to_value(yaml).ok()
}

/// Top-level keys besides `name` and `services`.
fn top_level(top: &mut Obj, draft: &mut Draft) -> Result<(), FieldError> {
    if let Some(volumes) = top.obj("volumes")? {
        for (name, raw) in volumes.entries() {
            let declared = raw.as_object().is_some_and(|m| !m.is_empty());
            if declared {
                draft.warn(format!(
                    "{}: volumes.{name} options (driver, external, …) are not migrated: Berth creates a named volume of its own.",
                    top.file
                ));
            }
        }
    }
    if top.get("version").is_some() {
        draft.warn(format!(
            "{}: version is obsolete in Compose and is ignored.",
            top.file
        ));
    }
    let extensions: Vec<String> = top
        .unread()
        .into_iter()
        .filter(|key| key.starts_with("x-"))
        .collect();
    for key in &extensions {
        top.get(key);
        draft.warn(format!(
            "{}: {key} is a Compose extension field and is ignored.",
            top.file
        ));
    }
    top.warn_unread(draft);
    Ok(())
}

/// Whether `reference` (as written in `env_file`) names the uploaded file `name`.
fn same_file(reference: &str, name: &str) -> bool {
    let reference = reference.trim_start_matches("./");
    reference == name.trim_start_matches("./") || base_name(reference) == base_name(name)
}
