//! `environment` and `env_file` of a Compose service: plain values copy, secret-looking ones
//! and interpolated ones (`${VAR}`, resolved from the shell at `docker compose up`) become
//! `env://KEY` references.

use berth_api::validate::FieldError;
use serde_json::Value;

use super::same_file;
use crate::adapters::Files;
use crate::adapters::draft::{Draft, file_error, is_secret, list, plain, secret};
use crate::adapters::fields::Obj;

/// Keys and values, later entries winning.
pub(super) type Vars = Vec<(String, Option<String>)>;

fn set(vars: &mut Vars, key: &str, value: Option<String>) {
    vars.retain(|(known, _)| known != key);
    vars.push((key.to_string(), value));
}

/// `env_file`: a path, a list of paths, or `[{path, required}]`.
pub(super) fn env_files(
    obj: &mut Obj,
    name: &str,
    files: &Files,
    used: &mut Vec<String>,
    vars: &mut Vars,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    let entries: Vec<(String, bool)> = match obj.get("env_file") {
        None => return Ok(()),
        Some(Value::String(path)) => vec![(path.clone(), true)],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(path) => Some((path.clone(), true)),
                other => Some((
                    other.get("path")?.as_str()?.to_string(),
                    other
                        .get("required")
                        .and_then(Value::as_bool)
                        .unwrap_or(true),
                )),
            })
            .collect::<Option<_>>()
            .ok_or_else(|| obj.wrong("env_file", "a path or a list of paths"))?,
        Some(_) => return Err(obj.wrong("env_file", "a path or a list of paths")),
    };
    for (path, required) in entries {
        match files.iter().find(|(file, _)| same_file(&path, file)) {
            Some((file, content)) => {
                used.push(file.clone());
                for (key, value) in dotenv(file, content)? {
                    set(vars, &key, Some(value));
                }
            }
            None if required => draft.block(
                "compose_env_file_missing",
                obj.at("env_file"),
                format!(
                    "Service {name} reads {path}, which was not uploaded; add it to source.files."
                ),
            ),
            None => draft.warn(format!(
                "{}: {} {path} is optional and was not uploaded.",
                obj.file,
                obj.child("env_file")
            )),
        }
    }
    Ok(())
}

/// `KEY=VALUE` lines (`export` and matching quotes allowed, `#` comments).
fn dotenv(file: &str, content: &str) -> Result<Vec<(String, String)>, FieldError> {
    let mut vars = Vec::new();
    for (index, line) in content.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(file_error(
                file,
                format!("line {} of {file} is not KEY=VALUE", index + 1),
            ));
        };
        let value = value.trim();
        let unquoted = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        vars.push((key.trim().to_string(), unquoted.to_string()));
    }
    Ok(vars)
}

/// `environment`: a map, or a list of `KEY=VALUE` / `KEY`.
pub(super) fn environment(obj: &mut Obj, vars: &mut Vars) -> Result<(), FieldError> {
    match obj.get("environment") {
        None => {}
        Some(Value::Object(map)) => {
            for (key, value) in map {
                let value = match value {
                    Value::Null => None,
                    Value::String(text) => Some(text.clone()),
                    other => Some(other.to_string()),
                };
                set(vars, key, value);
            }
        }
        Some(Value::Array(items)) => {
            for item in items {
                let text = item
                    .as_str()
                    .ok_or_else(|| obj.wrong("environment", "a map or a list of KEY=VALUE"))?;
                match text.split_once('=') {
                    Some((key, value)) => set(vars, key, Some(value.to_string())),
                    None => set(vars, text, None),
                }
            }
        }
        Some(_) => return Err(obj.wrong("environment", "a map or a list of KEY=VALUE")),
    }
    Ok(())
}

/// Emits the variables of resource `reference`, warning with keys only.
pub(super) fn emit(obj: &Obj, reference: &str, vars: Vars, draft: &mut Draft) {
    let (mut secrets, mut outside) = (Vec::new(), Vec::new());
    for (key, value) in vars {
        match value {
            Some(value) if value.contains('$') => {
                outside.push(key.clone());
                draft.variables.push(secret(&key, Some(reference)));
            }
            Some(value) if !is_secret(&key, &value) => {
                draft.variables.push(plain(&key, &value, Some(reference)))
            }
            Some(_) => {
                secrets.push(key.clone());
                draft.variables.push(secret(&key, Some(reference)));
            }
            None => {
                outside.push(key.clone());
                draft.variables.push(secret(&key, Some(reference)));
            }
        }
    }
    if !secrets.is_empty() {
        draft.warn(format!(
            "{}: {}: secret-looking {}: values not copied; each becomes env://<KEY>, supplied at apply from your environment.",
            obj.file, obj.path, list(&secrets)
        ));
    }
    if !outside.is_empty() {
        draft.warn(format!(
            "{}: {}: {} take their values from the shell (${{…}} or no value); each becomes env://<KEY>, supplied at apply.",
            obj.file, obj.path, list(&outside)
        ));
    }
}
