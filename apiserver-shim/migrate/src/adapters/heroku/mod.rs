//! Heroku → bundle: `app.json`, a `Procfile`, a config export (`heroku config --shell` or
//! `--json`) and a domains export (`heroku domains --json`), each recognised by content.
//! Processes become resources (`web` with a port, the rest workers); config vars become
//! `env://KEY` references — their values are never copied — except add-on URLs, which become
//! imported-external dependencies.

use berth_api::migrations::MigrationBundle;
use berth_api::validate::FieldError;
use serde_json::{Map, Value};

use super::draft::{Draft, file_error};
use super::{Defaults, Files, base_name};

mod app;
mod parse;
mod processes;
#[cfg(test)]
mod tests;

pub use parse::{shell_quote, shell_unquote};

/// app.json's top-level keys (https://devcenter.heroku.com/articles/app-json-schema).
const APP_KEYS: [&str; 15] = [
    "name",
    "description",
    "keywords",
    "website",
    "repository",
    "logo",
    "success_url",
    "scripts",
    "env",
    "formation",
    "image",
    "addons",
    "buildpacks",
    "environments",
    "stack",
];

/// The files of one Heroku app, each parsed.
#[derive(Default)]
pub(crate) struct Inputs<'a> {
    pub app: Option<(&'a str, Value)>,
    pub procfile: Option<(&'a str, Vec<(String, String)>)>,
    pub config: Option<(&'a str, Vec<(String, String)>)>,
    pub domains: Option<(&'a str, Value)>,
}

/// Translates a Heroku app's files.
pub fn translate(files: &Files, defaults: &Defaults) -> Result<MigrationBundle, FieldError> {
    let mut inputs = Inputs::default();
    for (name, content) in files {
        recognise(name, content, &mut inputs)?;
    }
    let mut draft = Draft::default();
    let app = match &inputs.app {
        Some((file, value)) => Some(app::App::read(file, value, &mut draft)?),
        None => None,
    };
    processes::translate(&inputs, app.as_ref(), &mut draft)?;
    draft.finish("heroku", "heroku", defaults)
}

/// Content first; the name `Procfile` only for a Procfile with nothing but comments.
fn recognise<'a>(name: &'a str, content: &str, inputs: &mut Inputs<'a>) -> Result<(), FieldError> {
    let once = |taken: bool, what: &str| {
        if taken {
            Err(file_error(
                name,
                format!("{name} is a second {what}; send one per app"),
            ))
        } else {
            Ok(())
        }
    };
    if let Ok(value) = serde_json::from_str::<Value>(content) {
        match &value {
            Value::Array(items) if items.iter().all(|item| item.get("hostname").is_some()) => {
                once(inputs.domains.is_some(), "domains export")?;
                inputs.domains = Some((name, value));
                return Ok(());
            }
            Value::Object(map) if is_config_json(map) => {
                once(inputs.config.is_some(), "config export")?;
                let vars = map
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()));
                inputs.config = Some((name, vars.collect()));
                return Ok(());
            }
            Value::Object(map)
                if map.keys().any(|key| APP_KEYS.contains(&key.as_str()))
                    || base_name(name) == "app.json" =>
            {
                once(inputs.app.is_some(), "app.json")?;
                inputs.app = Some((name, value));
                return Ok(());
            }
            _ => {}
        }
    } else if parse::looks_like_config(content) {
        once(inputs.config.is_some(), "config export")?;
        inputs.config = Some((name, parse::config_lines(name, content)?));
        return Ok(());
    } else if parse::looks_like_procfile(content) || base_name(name) == "Procfile" {
        once(inputs.procfile.is_some(), "Procfile")?;
        inputs.procfile = Some((name, parse::procfile(name, content)?));
        return Ok(());
    }
    Err(file_error(
        name,
        format!(
            "{name} is not a Heroku file Berth reads: expected app.json, a Procfile \
             (`<type>: <command>` lines), `heroku config --shell` (KEY=value lines) or `--json` \
             output, or `heroku domains --json` output"
        ),
    ))
}

/// `heroku config --json`: only string values, keys that look like env names and, when some
/// are lower-case, none of app.json's keys.
fn is_config_json(map: &Map<String, Value>) -> bool {
    let strings = map.values().all(Value::is_string) && map.keys().all(|k| parse::is_env_key(k));
    let upper = map
        .keys()
        .all(|k| !k.chars().any(|c| c.is_ascii_lowercase()));
    strings && (upper || !map.keys().any(|key| APP_KEYS.contains(&key.as_str())))
}
