//! Config as code (`railway.json` / `railway.toml`): one service's build and deploy settings,
//! with `environments.<name>` blocks over them for the environment being migrated (Railway's
//! priority: environment block > base file > service settings).

use berth_api::validate::FieldError;
use serde_json::{Map, Value};

use super::env_config::Known;
use super::settings::{Target, apply_build, apply_deploy};
use crate::adapters::Defaults;
use crate::adapters::draft::{Draft, file_error, slugify, source};
use crate::adapters::fields::Obj;

/// Applies one file to the service it names (or, without an environment config, to a
/// resource of its own).
pub(super) fn apply(
    file: &str,
    value: &Value,
    services: &[Known],
    defaults: &Defaults,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    let named = super::code_service(file);
    let mut top = Obj::new(file, "", value)?;
    top.str("$schema")?;
    let environments = top.obj("environments")?;
    let (build, deploy) = effective(&mut top, environments, defaults.environment_name(), draft)?;
    top.warn_unread(draft);
    let (reference, name, image) = match target(file, named.as_deref(), services)? {
        Some(known) => (known.reference.clone(), known.name.clone(), known.image),
        None => standalone(file, named.as_deref(), draft),
    };
    let target = Target {
        reference: &reference,
        name: &name,
        image,
    };
    if let Some(build) = &build {
        apply_build(Obj::new(file, "build", build)?, &target, draft)?;
    }
    if let Some(deploy) = &deploy {
        apply_deploy(Obj::new(file, "deploy", deploy)?, &target, draft)?;
    }
    Ok(())
}

/// `build` and `deploy` with the chosen environment's block merged over them.
fn effective(
    top: &mut Obj,
    environments: Option<Obj>,
    environment: &str,
    draft: &mut Draft,
) -> Result<(Option<Value>, Option<Value>), FieldError> {
    let mut build = top
        .obj("build")?
        .map(|_| top.peek("build").cloned().unwrap_or_default());
    let mut deploy = top
        .obj("deploy")?
        .map(|_| top.peek("deploy").cloned().unwrap_or_default());
    let Some(environments) = environments else {
        return Ok((build, deploy));
    };
    let mut others = Vec::new();
    for (name, mut block) in environments.members()? {
        if name != environment {
            others.push(block.path.clone());
            continue;
        }
        if let Some(over) = block.obj("build")?.and(block.peek("build")) {
            merge(&mut build, over);
        }
        if let Some(over) = block.obj("deploy")?.and(block.peek("deploy")) {
            merge(&mut deploy, over);
        }
        block.warn_unread(draft);
    }
    if !others.is_empty() {
        draft.warn(format!(
            "{}: {} apply to other environments than {environment} and are not used.",
            top.file,
            others.join(", ")
        ));
    }
    Ok((build, deploy))
}

/// Key by key, the override wins (`null` included: it resets a setting).
fn merge(base: &mut Option<Value>, over: &Value) {
    let target = base.get_or_insert_with(|| Value::Object(Map::new()));
    if let (Value::Object(target), Value::Object(over)) = (target, over) {
        for (key, value) in over {
            target.insert(key.clone(), value.clone());
        }
    }
}

/// The environment-config service this file belongs to; `None` without an environment config.
fn target<'a>(
    file: &str,
    named: Option<&str>,
    services: &'a [Known],
) -> Result<Option<&'a Known>, FieldError> {
    if services.is_empty() {
        return Ok(None);
    }
    let names = || {
        services
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match named {
        Some(named) => services
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(named) || s.reference == slugify(named, "svc"))
            .map(Some)
            .ok_or_else(|| {
                file_error(
                    file,
                    format!("{file} names service {named}, which the environment config does not have (services: {})", names()),
                )
            }),
        None if services.len() == 1 => Ok(services.first()),
        None => Err(file_error(
            file,
            format!(
                "{file} does not say which service it configures; name it <service>.railway.json \
                 or <service>/railway.json (services: {})",
                names()
            ),
        )),
    }
}

/// A resource of the file's own: config as code holds no source, port or variables.
fn standalone(file: &str, named: Option<&str>, draft: &mut Draft) -> (String, String, bool) {
    let name = named.unwrap_or("app").to_string();
    let reference = draft.add_resource(&name, "application", source("local-folder", "."));
    draft.warn(format!(
        "{file}: config as code names no source or port: service {name} is migrated from the \
         local folder `.` without a network profile; set its source and port before applying."
    ));
    (reference, name, false)
}
