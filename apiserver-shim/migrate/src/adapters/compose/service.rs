//! One Compose service → one resource.

use berth_api::migrations::{BundleNetwork, BundleSource, BundleVolume};
use berth_api::validate::FieldError;
use serde_json::Value;

use super::{database, env};
use crate::adapters::Files;
use crate::adapters::draft::{Draft, database_kind, image_source, source};
use crate::adapters::fields::Obj;

mod checks;

/// What every service is translated with: the uploaded files and the services that became
/// managed databases.
pub(super) struct Context<'a> {
    pub files: &'a Files,
    pub databases: &'a [database::Database],
}

/// Translates service `name` into `draft`.
pub(super) fn translate(
    name: &str,
    mut obj: Obj,
    context: &Context<'_>,
    used: &mut Vec<String>,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    let files = context.files;
    let image = obj.str("image")?;
    let (bundle_source, dockerfile) = build_source(&mut obj, image, draft)?;
    let published = checks::ports(&mut obj, name, draft)?;
    let exposed = checks::expose(&mut obj)?;
    let database = image.and_then(database_kind);
    let kind = match (database, published.or(exposed)) {
        (Some(_), _) => "database",
        (None, Some(_)) => "application",
        (None, None) => "worker",
    };
    let reference = draft.add_resource(name, kind, bundle_source);
    let network = match (published, exposed) {
        (Some(port), _) if database.is_none() => Some(network(port, "http", "reverse-proxy")),
        (Some(port), _) | (None, Some(port)) => Some(network(
            port,
            if database.is_some() { "tcp" } else { "http" },
            "none",
        )),
        (None, None) => None,
    };
    if published.is_some() && database.is_some() {
        draft.warn(format!("{}: {}.ports: database service {name} is reachable by other resources but its port is not published.", obj.file, obj.path));
    }
    let start = command(&mut obj)?;
    let health = checks::healthcheck(&mut obj, draft)?;
    let resource = draft.resource(&reference);
    resource.network = network;
    resource.runtime.start_command = start;
    resource.runtime.health_check_path = health;
    if let Some(path) = dockerfile {
        resource.runtime.strategy = "dockerfile".into();
        resource.runtime.dockerfile_path = Some(path);
    }
    let mut vars = env::Vars::new();
    env::env_files(&mut obj, name, files, used, &mut vars, draft)?;
    env::environment(&mut obj, &mut vars)?;
    database::bind(&obj, &mut vars, &reference, context.databases, draft);
    env::emit(&obj, &reference, vars, draft);
    volumes(&mut obj, name, &reference, draft)?;
    checks::behaviour(&mut obj, name, draft)?;
    obj.warn_unread(draft);
    Ok(())
}

fn network(port: u16, protocol: &str, exposure: &str) -> BundleNetwork {
    BundleNetwork {
        internal_port: port,
        upstream_protocol: protocol.into(),
        exposure_mode: exposure.into(),
        target_service_name: None,
    }
}

/// `image` → docker-image (an image beside `build` names the result: the build wins);
/// `build` (a context or `{context, dockerfile}`) → local-folder + dockerfile strategy.
fn build_source(
    obj: &mut Obj,
    image: Option<&str>,
    draft: &mut Draft,
) -> Result<(BundleSource, Option<String>), FieldError> {
    match obj.get("build") {
        Some(Value::String(context)) => {
            Ok((source("local-folder", context), Some("Dockerfile".into())))
        }
        Some(value @ Value::Object(_)) => {
            let mut build = Obj::new(obj.file, &obj.child("build"), value)?;
            let context = build.str("context")?.unwrap_or(".").to_string();
            let dockerfile = build.str("dockerfile")?.unwrap_or("Dockerfile").to_string();
            build.warn_unread(draft);
            Ok((source("local-folder", &context), Some(dockerfile)))
        }
        Some(_) => Err(obj.wrong("build", "a context path or {context, dockerfile}")),
        None => match image {
            Some(image) => Ok((image_source(image), None)),
            None => Err(obj.wrong("image", "given (or build)")),
        },
    }
}

/// `command` as one shell line (a list is joined with shell quoting).
fn command(obj: &mut Obj) -> Result<Option<String>, FieldError> {
    match obj.get("command") {
        None => Ok(None),
        Some(Value::String(line)) => Ok(Some(line.clone())),
        Some(Value::Array(words)) => {
            let words: Option<Vec<String>> =
                words.iter().map(|w| w.as_str().map(shell_word)).collect();
            words
                .map(|w| Some(w.join(" ")))
                .ok_or_else(|| obj.wrong("command", "a string or a list of strings"))
        }
        Some(_) => Err(obj.wrong("command", "a string or a list of strings")),
    }
}

/// A word a POSIX shell reads back unchanged.
pub(super) fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `volumes`: named volumes migrate; bind mounts block; anonymous and tmpfs are warnings.
fn volumes(
    obj: &mut Obj,
    name: &str,
    reference: &str,
    draft: &mut Draft,
) -> Result<(), FieldError> {
    let path = obj.at("volumes");
    for (index, item) in obj.arr("volumes")?.into_iter().flatten().enumerate() {
        let (kind, src, target) = match item {
            Value::String(short) => {
                let parts: Vec<&str> = short.split(':').collect();
                match parts.as_slice() {
                    [target] => ("volume", "", *target),
                    [src, target, ..] => {
                        (if is_path(src) { "bind" } else { "volume" }, *src, *target)
                    }
                    [] => ("volume", "", ""),
                }
            }
            Value::Object(map) => {
                let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or("");
                (text("type"), text("source"), text("target"))
            }
            _ => return Err(obj.wrong("volumes", "a list of volume mounts")),
        };
        match kind {
            "volume" if !src.is_empty() => {
                let volume_ref = draft.volume_refs.allocate(src, "vol");
                draft.volumes.push(BundleVolume {
                    reference: volume_ref,
                    name: src.to_string(),
                    resource_ref: reference.to_string(),
                    mount_path: target.to_string(),
                    size_mb: None,
                });
            }
            "bind" => draft.block(
                "compose_bind_mount_unsupported",
                format!("{path}.{index}"),
                format!("Service {name} mounts a host path at {target}; Berth mounts only named volumes."),
            ),
            _ => draft.warn(format!("{path}.{index}: the {kind} mount at {target} of service {name} has no name and is not migrated.")),
        }
    }
    Ok(())
}

fn is_path(source: &str) -> bool {
    source.starts_with(['.', '/', '~', '$'])
}
