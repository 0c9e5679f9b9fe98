//! One service of a Compose file: the keys Berth carries out, each read into a [`Service`];
//! any other key is refused by its path, with what to do instead.

use serde_yaml::Value;

use super::values::{duration, list, pairs, scalar, text, words};
use super::{
    BuildSpec, Condition, Dependency, Healthcheck, Read, Service, VolumeMount, error, key_text,
};

/// Keys of a service Berth carries out.
const SERVICE_KEYS: [&str; 15] = [
    "image",
    "build",
    "command",
    "entrypoint",
    "environment",
    "env_file",
    "volumes",
    "depends_on",
    "healthcheck",
    "restart",
    "user",
    "working_dir",
    "expose",
    "labels",
    "stop_grace_period",
];

/// What to do instead of keys Berth refuses.
fn instead(key: &str) -> &'static str {
    match key {
        "ports" => {
            "the edge proxy routes the stack's target service (networkProfile.targetServiceName); \
             other services are reached by name on the stack's own network"
        }
        "networks" | "network_mode" => "every service joins the stack's own network",
        "container_name" => "Berth names the containers it runs",
        "deploy" | "scale" => "each service runs one container",
        "secrets" | "configs" => "use the resource's secrets and variables (environment)",
        "privileged" | "cap_add" | "devices" | "pid" | "ipc" => {
            "Berth does not run privileged containers"
        }
        _ => "Berth does not carry it out",
    }
}

pub(super) fn service(name: &str, body: &Value) -> Read<Service> {
    let path = format!("services.{name}");
    dns_name(&path, name)?;
    let map = body
        .as_mapping()
        .ok_or_else(|| error(&path, "a service is a mapping"))?;
    for key in map.keys() {
        let key = key_text(key, &path)?;
        if !SERVICE_KEYS.contains(&key.as_str()) && !key.starts_with("x-") {
            return Err(error(
                &format!("{path}.{key}"),
                format!("not supported: {}", instead(&key)),
            ));
        }
    }
    let get = |key: &str| map.get(key).filter(|v| !v.is_null());
    let at = |key: &str| format!("{path}.{key}");
    let service = Service {
        name: name.to_string(),
        image: get("image").map(|v| text(&at("image"), v)).transpose()?,
        build: get("build").map(|v| build(&at("build"), v)).transpose()?,
        command: get("command")
            .map(|v| words(&at("command"), v))
            .transpose()?,
        entrypoint: get("entrypoint")
            .map(|v| words(&at("entrypoint"), v))
            .transpose()?,
        environment: get("environment")
            .map(|v| pairs(&at("environment"), v))
            .transpose()?
            .unwrap_or_default(),
        env_files: get("env_file")
            .map(|v| list(&at("env_file"), v))
            .transpose()?
            .unwrap_or_default(),
        volumes: get("volumes")
            .map(|v| mounts(&at("volumes"), v))
            .transpose()?
            .unwrap_or_default(),
        depends_on: get("depends_on")
            .map(|v| dependencies(&at("depends_on"), v))
            .transpose()?
            .unwrap_or_default(),
        healthcheck: get("healthcheck")
            .map(|v| healthcheck(&at("healthcheck"), v))
            .transpose()?
            .flatten(),
        restart: get("restart")
            .map(|v| restart(&at("restart"), v))
            .transpose()?,
        user: get("user").map(|v| text(&at("user"), v)).transpose()?,
        working_dir: get("working_dir")
            .map(|v| text(&at("working_dir"), v))
            .transpose()?,
        expose: get("expose")
            .map(|v| list(&at("expose"), v))
            .transpose()?
            .unwrap_or_default(),
        labels: get("labels")
            .map(|v| pairs(&at("labels"), v))
            .transpose()?
            .unwrap_or_default()
            .into_iter()
            .collect(),
        stop_grace_period: get("stop_grace_period")
            .map(|v| duration(&at("stop_grace_period"), v))
            .transpose()?,
    };
    if service.image.is_none() && service.build.is_none() {
        return Err(error(&path, "a service needs an image or a build"));
    }
    Ok(service)
}

/// Service names are the containers' names on the stack's network: DNS labels.
fn dns_name(path: &str, name: &str) -> Read<()> {
    let valid = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    match valid {
        true => Ok(()),
        false => Err(error(
            path,
            "a service name is 1-40 lowercase letters, digits or dashes",
        )),
    }
}

fn build(path: &str, value: &Value) -> Read<BuildSpec> {
    if let Some(context) = value.as_str() {
        return Ok(BuildSpec {
            context: context.to_string(),
            ..BuildSpec::default()
        });
    }
    let map = value
        .as_mapping()
        .ok_or_else(|| error(path, "a context path or a mapping"))?;
    for key in map.keys() {
        let key = key_text(key, path)?;
        if !["context", "dockerfile", "args", "target"].contains(&key.as_str()) {
            return Err(error(
                &format!("{path}.{key}"),
                "not supported: a build takes context, dockerfile, args and target",
            ));
        }
    }
    let get = |key: &str| map.get(key).filter(|v| !v.is_null());
    Ok(BuildSpec {
        context: get("context")
            .map(|v| text(&format!("{path}.context"), v))
            .transpose()?
            .unwrap_or_else(|| ".".into()),
        dockerfile: get("dockerfile")
            .map(|v| text(&format!("{path}.dockerfile"), v))
            .transpose()?,
        args: get("args")
            .map(|v| pairs(&format!("{path}.args"), v))
            .transpose()?
            .unwrap_or_default()
            .into_iter()
            .collect(),
        target: get("target")
            .map(|v| text(&format!("{path}.target"), v))
            .transpose()?,
    })
}

fn mounts(path: &str, value: &Value) -> Read<Vec<VolumeMount>> {
    let items = value
        .as_sequence()
        .ok_or_else(|| error(path, "a list of volume mounts"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| mount(&format!("{path}[{i}]"), item))
        .collect()
}

fn mount(path: &str, item: &Value) -> Read<VolumeMount> {
    let (source, target, read_only) = match item {
        Value::String(short) => {
            let parts: Vec<&str> = short.split(':').collect();
            match parts.as_slice() {
                [source, target] => (source.to_string(), target.to_string(), false),
                [source, target, mode] => {
                    (source.to_string(), target.to_string(), mode.contains("ro"))
                }
                [_] => {
                    return Err(error(
                        path,
                        "an anonymous volume is not kept across deploys: name it (name:/path)",
                    ));
                }
                _ => return Err(error(path, "name:/path[:ro]")),
            }
        }
        Value::Mapping(map) => {
            let field = |key: &str| map.get(key).and_then(scalar);
            if field("type").is_some_and(|t| t != "volume") {
                return Err(error(
                    path,
                    "only named volumes (type: volume) are supported",
                ));
            }
            let source =
                field("source").ok_or_else(|| error(path, "a volume needs a source name"))?;
            let target = field("target").ok_or_else(|| error(path, "a volume needs a target"))?;
            (
                source,
                target,
                field("read_only").as_deref() == Some("true"),
            )
        }
        _ => return Err(error(path, "name:/path or a mapping")),
    };
    let host_path = source.starts_with('.') || source.starts_with('/') || source.starts_with('~');
    if host_path {
        return Err(error(
            path,
            format!(
                "bind mount of {source} is not supported: the server's files are not the \
                 repository's; use a named volume"
            ),
        ));
    }
    if !target.starts_with('/') {
        return Err(error(
            path,
            "the target is an absolute path in the container",
        ));
    }
    Ok(VolumeMount {
        volume: source,
        target,
        read_only,
    })
}

fn dependencies(path: &str, value: &Value) -> Read<Vec<Dependency>> {
    match value {
        Value::Sequence(_) => Ok(list(path, value)?
            .into_iter()
            .map(|service| Dependency {
                service,
                condition: Condition::Started,
            })
            .collect()),
        Value::Mapping(map) => map
            .iter()
            .map(|(name, settings)| {
                let service = key_text(name, path)?;
                let condition = settings
                    .get("condition")
                    .and_then(Value::as_str)
                    .unwrap_or("service_started");
                let condition = match condition {
                    "service_started" => Condition::Started,
                    "service_healthy" => Condition::Healthy,
                    "service_completed_successfully" => Condition::CompletedSuccessfully,
                    other => {
                        return Err(error(
                            &format!("{path}.{service}.condition"),
                            format!("unknown condition {other}"),
                        ));
                    }
                };
                Ok(Dependency { service, condition })
            })
            .collect(),
        _ => Err(error(path, "a list or mapping of services")),
    }
}

fn healthcheck(path: &str, value: &Value) -> Read<Option<Healthcheck>> {
    let map = value.as_mapping().ok_or_else(|| error(path, "a mapping"))?;
    let get = |key: &str| map.get(key).filter(|v| !v.is_null());
    if get("disable").and_then(Value::as_bool) == Some(true) {
        return Ok(Some(Healthcheck {
            test: vec!["NONE".into()],
            interval: None,
            timeout: None,
            retries: None,
            start_period: None,
        }));
    }
    let test = match get("test") {
        None => return Ok(None),
        Some(Value::String(shell)) => vec!["CMD-SHELL".to_string(), shell.clone()],
        Some(other) => list(&format!("{path}.test"), other)?,
    };
    let seconds = |key: &str| {
        get(key)
            .map(|v| duration(&format!("{path}.{key}"), v))
            .transpose()
    };
    Ok(Some(Healthcheck {
        test,
        interval: seconds("interval")?,
        timeout: seconds("timeout")?,
        retries: get("retries")
            .map(|v| {
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| error(&format!("{path}.retries"), "a whole number"))
            })
            .transpose()?,
        start_period: seconds("start_period")?,
    }))
}

fn restart(path: &str, value: &Value) -> Read<String> {
    let policy = text(path, value)?;
    let name = policy.split(':').next().unwrap_or_default();
    match ["no", "always", "unless-stopped", "on-failure"].contains(&name) {
        true => Ok(name.to_string()),
        false => Err(error(path, "no, always, unless-stopped or on-failure")),
    }
}
