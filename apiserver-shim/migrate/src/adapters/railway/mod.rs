//! Railway → bundle. Three kinds of file, recognised by content: Appaloft's
//! `railway.appaloft.io/export/v1` envelope (a whole project, sent alone), the output of
//! `railway environment config --json` (services, variables, domains, volumes of one
//! environment) and per-service config-as-code (`railway.json` / `railway.toml`), which
//! overrides the service's settings the way Railway applies it.

use berth_api::migrations::MigrationBundle;
use berth_api::validate::FieldError;
use serde_json::Value;

use super::draft::{Draft, file_error};
use super::{Defaults, Files, base_name};

mod appaloft;
mod code;
mod env_config;
mod settings;
#[cfg(test)]
mod tests;

/// `apiVersion` of Appaloft's Railway export.
pub const APPALOFT_EXPORT: &str = "railway.appaloft.io/export/v1";

/// What a Railway file turned out to be.
enum Recognised {
    Appaloft(Value),
    EnvironmentConfig(Value),
    ConfigAsCode(Value),
}

/// Translates a set of Railway files (see the module doc for which).
pub fn translate(files: &Files, defaults: &Defaults) -> Result<MigrationBundle, FieldError> {
    let mut environment_config: Option<(&str, Value)> = None;
    let mut code_files = Vec::new();
    for (name, content) in files {
        match recognise(name, content)? {
            Recognised::Appaloft(value) => {
                if let Some(other) = files.keys().find(|other| *other != name) {
                    return Err(file_error(
                        other,
                        "an Appaloft Railway export describes the whole project; send it alone",
                    ));
                }
                return appaloft::translate(name, &value, defaults);
            }
            Recognised::EnvironmentConfig(value) => {
                if environment_config.is_some() {
                    return Err(file_error(
                        name,
                        "only one `railway environment config --json` output can be translated at a time",
                    ));
                }
                environment_config = Some((name, value));
            }
            Recognised::ConfigAsCode(value) => code_files.push((name.as_str(), value)),
        }
    }
    let mut draft = Draft::default();
    let services = match &environment_config {
        Some((name, value)) => env_config::translate(name, value, &mut draft)?,
        None => Vec::new(),
    };
    for (name, value) in &code_files {
        code::apply(name, value, &services, defaults, &mut draft)?;
    }
    draft.finish("railway", "railway", defaults)
}

/// Content first (JSON, else TOML), then the conventional name.
fn recognise(name: &str, content: &str) -> Result<Recognised, FieldError> {
    let parsed = serde_json::from_str::<Value>(content)
        .ok()
        .or_else(|| toml::from_str::<Value>(content).ok());
    if let Some(value) = parsed.filter(Value::is_object) {
        let map = value.as_object().cloned().unwrap_or_default();
        let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or("");
        let is_object = |key: &str| map.get(key).is_some_and(Value::is_object);
        if text("apiVersion") == APPALOFT_EXPORT {
            return Ok(Recognised::Appaloft(value));
        }
        if is_object("services") || is_object("sharedVariables") {
            return Ok(Recognised::EnvironmentConfig(value));
        }
        let schema = text("$schema").to_ascii_lowercase();
        if schema.contains("railway") || is_object("build") || is_object("deploy") {
            return Ok(Recognised::ConfigAsCode(value));
        }
        if is_code_name(name) {
            return Ok(Recognised::ConfigAsCode(value));
        }
    }
    Err(file_error(
        name,
        format!(
            "{name} is not a Railway file Berth reads: expected Appaloft's {APPALOFT_EXPORT} JSON, \
             the output of `railway environment config --json` (an object with `services`), \
             or a railway.json / railway.toml (with `build` or `deploy`)"
        ),
    ))
}

/// `railway.json`, `railway.web.toml`, `web.railway.json`, …
fn is_code_name(name: &str) -> bool {
    let base = base_name(name).to_ascii_lowercase();
    base.contains("railway") && (base.ends_with(".json") || base.ends_with(".toml"))
}

/// The service a config-as-code file names: `web/railway.json`, `railway.web.json` and
/// `web.railway.toml` → `web`; a bare `railway.json` → none. A name without `railway` (an
/// upload saved under any name) says nothing but its directory.
fn code_service(name: &str) -> Option<String> {
    let base = base_name(name);
    let directory = name[..name.len() - base.len()]
        .trim_end_matches(['/', '\\'])
        .rsplit(['/', '\\'])
        .next()
        .filter(|dir| !dir.is_empty() && *dir != ".");
    let stem = base
        .strip_suffix(".json")
        .or_else(|| base.strip_suffix(".toml"))
        .unwrap_or(base);
    let named = stem
        .strip_prefix("railway.")
        .or_else(|| stem.strip_suffix(".railway"))
        .filter(|named| !named.is_empty());
    named.or(directory).map(str::to_string)
}
