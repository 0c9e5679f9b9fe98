//! `app.json`: name, source (repository or image), env defaults, formation and add-ons;
//! everything else it holds is a warning.

use berth_api::migrations::BundleSource;
use berth_api::validate::FieldError;
use serde_json::Value;

use crate::adapters::draft::{Draft, image_source, is_secret, source};
use crate::adapters::fields::Obj;

/// How an app.json `env` entry migrates.
pub(crate) enum Env {
    Plain(String),
    /// A generated or required value the user supplies at apply.
    Secret,
}

/// What processes and variables need from app.json.
pub(crate) struct App {
    pub source: Option<BundleSource>,
    pub env: Vec<(String, Env)>,
    /// `formation.<type>`: (type, quantity, path of the quantity).
    pub formation: Vec<(String, Option<u64>, String)>,
    pub addons: Vec<String>,
    pub file: String,
}

impl App {
    pub(crate) fn read(file: &str, value: &Value, draft: &mut Draft) -> Result<Self, FieldError> {
        let mut top = Obj::new(file, "", value)?;
        draft.name = top.str("name")?.map(str::to_string);
        draft.description = top.str("description")?.map(str::to_string);
        let source = match (top.str("repository")?, top.str("image")?) {
            (_, Some(image)) => Some(image_source(image)),
            (Some(repository), None) => Some(source("remote-git", repository)),
            (None, None) => None,
        };
        let env = match top.obj("env")? {
            Some(env) => read_env(env, draft)?,
            None => Vec::new(),
        };
        let formation = match top.obj("formation")? {
            Some(formation) => read_formation(formation, draft)?,
            None => Vec::new(),
        };
        let addons = read_addons(&mut top)?;
        if top.get("buildpacks").is_some() || top.get("stack").is_some() {
            draft.warn(format!(
                "{file}: buildpacks and stack are not migrated: Berth builds the app with its own builder."
            ));
        }
        top.warn_unread(draft);
        Ok(Self {
            source,
            env,
            formation,
            addons,
            file: file.to_string(),
        })
    }
}

/// `env.<KEY>`: a string or `{value, generator, required, description}`.
fn read_env(env: Obj, draft: &mut Draft) -> Result<Vec<(String, Env)>, FieldError> {
    let mut found = Vec::new();
    let mut optional = Vec::new();
    for (key, raw) in env.entries() {
        let migrated = match raw {
            Value::String(value) => Some(plain_or_secret(key, value)),
            _ => {
                let mut entry = Obj::new(env.file, &env.child(key), raw)?;
                let value = entry.str("value")?;
                let generated = entry.str("generator")?.is_some();
                let required = entry.bool("required")?.unwrap_or(true);
                entry.str("description")?;
                entry.warn_unread(draft);
                match value {
                    _ if generated => Some(Env::Secret),
                    Some(value) => Some(plain_or_secret(key, value)),
                    None if required => Some(Env::Secret),
                    None => None,
                }
            }
        };
        match migrated {
            Some(migrated) => found.push((key.clone(), migrated)),
            None => optional.push(key.clone()),
        }
    }
    if !optional.is_empty() {
        draft.warn(format!(
            "{}: env: {} are optional and have no value; they are not migrated (set them on Berth if you use them).",
            env.file,
            optional.join(", ")
        ));
    }
    Ok(found)
}

fn plain_or_secret(key: &str, value: &str) -> Env {
    if is_secret(key, value) {
        Env::Secret
    } else {
        Env::Plain(value.to_string())
    }
}

/// `formation.<type>.quantity|size`.
fn read_formation(
    formation: Obj,
    draft: &mut Draft,
) -> Result<Vec<(String, Option<u64>, String)>, FieldError> {
    let mut found = Vec::new();
    for (kind, mut entry) in formation.members()? {
        let quantity = entry.uint("quantity")?;
        if entry.str("size")?.is_some() {
            draft.warn(format!(
                "{}: {} is not migrated: Berth sizes containers by the target server.",
                entry.file,
                entry.child("size")
            ));
        }
        entry.warn_unread(draft);
        found.push((kind.to_string(), quantity, entry.at("quantity")));
    }
    Ok(found)
}

/// `addons`: `"plan"` strings or `{plan, as, options}`; the add-on name before `:`.
fn read_addons(top: &mut Obj) -> Result<Vec<String>, FieldError> {
    let mut names = Vec::new();
    for item in top.arr("addons")?.into_iter().flatten() {
        let plan = match item {
            Value::String(plan) => plan.as_str(),
            other => other.get("plan").and_then(Value::as_str).unwrap_or(""),
        };
        let name = plan.split(':').next().unwrap_or("").trim();
        if name.is_empty() {
            return Err(top.wrong("addons", "a list of add-on plans"));
        }
        names.push(name.to_string());
    }
    Ok(names)
}
