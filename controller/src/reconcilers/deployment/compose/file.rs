//! The part of the Compose specification a stack on one Berth server can honour, read from a
//! Compose file: services built or pulled, their command, environment (and `env_file`), named
//! volumes, `depends_on` with its conditions, health checks, restart policy, user, working
//! directory, exposed ports and labels. Anything else is refused by its path
//! (`services.web.ports`), with what to do instead: never read and silently ignored.
//! `${VAR}`, `${VAR:-default}` and `$$` are interpolated from the resource's configuration.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_yaml::{Mapping, Value};

/// A Compose file, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComposeFile {
    /// Services in the order the file lists them.
    pub services: Vec<Service>,
    /// Named volumes the file declares.
    pub volumes: Vec<String>,
}

/// One service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Service {
    pub name: String,
    pub image: Option<String>,
    pub build: Option<BuildSpec>,
    pub command: Option<Vec<String>>,
    pub entrypoint: Option<Vec<String>>,
    /// `KEY=value` entries, the file's `environment` after its `env_file`s.
    pub environment: Vec<(String, String)>,
    /// `env_file` paths, relative to the Compose file's directory, read by the caller.
    pub env_files: Vec<String>,
    pub volumes: Vec<VolumeMount>,
    pub depends_on: Vec<Dependency>,
    pub healthcheck: Option<Healthcheck>,
    pub restart: Option<String>,
    pub user: Option<String>,
    pub working_dir: Option<String>,
    pub expose: Vec<String>,
    pub labels: BTreeMap<String, String>,
    pub stop_grace_period: Option<Duration>,
}

/// `build:` of a service.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildSpec {
    /// Relative to the Compose file's directory.
    pub context: String,
    pub dockerfile: Option<String>,
    pub args: BTreeMap<String, String>,
    pub target: Option<String>,
}

/// A named volume mounted into a service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeMount {
    pub volume: String,
    pub target: String,
    pub read_only: bool,
}

/// What a service waits for before it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    pub service: String,
    pub condition: Condition,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    Started,
    Healthy,
    CompletedSuccessfully,
}

/// A service's health check, as Docker runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Healthcheck {
    /// `["CMD", …]`, `["CMD-SHELL", …]` or `["NONE"]`.
    pub test: Vec<String>,
    pub interval: Option<Duration>,
    pub timeout: Option<Duration>,
    pub retries: Option<u32>,
    pub start_period: Option<Duration>,
}

/// Why a Compose file cannot run as a Berth stack: the path of what is wrong, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComposeError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ComposeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

fn error(path: &str, message: impl Into<String>) -> ComposeError {
    ComposeError {
        path: path.to_string(),
        message: message.into(),
    }
}

type Read<T> = Result<T, ComposeError>;

/// Top-level keys Berth reads (`version` and `name` are informational; `x-` keys are
/// extensions, which Compose itself ignores).
const TOP_LEVEL: [&str; 4] = ["services", "volumes", "version", "name"];
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

/// Reads a Compose file, interpolating `${…}` from `variables`.
pub fn parse(text: &str, variables: &HashMap<String, String>) -> Read<ComposeFile> {
    let mut document: Value =
        serde_yaml::from_str(text).map_err(|e| error("compose file", format!("not YAML: {e}")))?;
    // `<<: *anchor` merges, as Compose reads them.
    document
        .apply_merge()
        .map_err(|e| error("compose file", format!("a merge key: {e}")))?;
    let document = interpolate(document, variables, "")?;
    let top = document
        .as_mapping()
        .ok_or_else(|| error("compose file", "not a mapping of services"))?;
    for key in top.keys() {
        let key = key_text(key, "")?;
        if !TOP_LEVEL.contains(&key.as_str()) && !key.starts_with("x-") {
            let why = match key.as_str() {
                "networks" => "every service joins the stack's own network",
                "secrets" | "configs" => "use the resource's secrets and variables",
                _ => "Berth does not carry it out",
            };
            return Err(error(&key, format!("not supported: {why}")));
        }
    }
    let volumes = named_volumes(top.get("volumes"))?;
    let services = top
        .get("services")
        .and_then(Value::as_mapping)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| error("services", "the file declares no services"))?;
    let services = services
        .iter()
        .map(|(name, body)| service(&key_text(name, "services")?, body))
        .collect::<Read<Vec<_>>>()?;
    let file = ComposeFile { services, volumes };
    check_references(&file)?;
    Ok(file)
}

fn key_text(key: &Value, parent: &str) -> Read<String> {
    key.as_str()
        .map(str::to_string)
        .ok_or_else(|| error(parent, "keys must be strings"))
}

fn named_volumes(value: Option<&Value>) -> Read<Vec<String>> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let map = value
        .as_mapping()
        .ok_or_else(|| error("volumes", "a mapping of volume names"))?;
    let mut names = Vec::new();
    for (name, settings) in map {
        let name = key_text(name, "volumes")?;
        let plain = settings.is_null() || settings.as_mapping().is_some_and(Mapping::is_empty);
        if !plain {
            return Err(error(
                &format!("volumes.{name}"),
                "volume drivers and options are not supported: Berth creates a local volume",
            ));
        }
        names.push(name);
    }
    Ok(names)
}

fn service(name: &str, body: &Value) -> Read<Service> {
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

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn text(path: &str, value: &Value) -> Read<String> {
    scalar(value).ok_or_else(|| error(path, "a string"))
}

fn list(path: &str, value: &Value) -> Read<Vec<String>> {
    match value {
        Value::Sequence(items) => items.iter().map(|item| text(path, item)).collect(),
        other => Ok(vec![text(path, other)?]),
    }
}

/// A command: a list of words, or a string run as Compose runs it (split as a shell would
/// split words without expanding them).
fn words(path: &str, value: &Value) -> Read<Vec<String>> {
    match value {
        Value::Sequence(_) => list(path, value),
        Value::String(line) => shell_words(line).ok_or_else(|| error(path, "unbalanced quotes")),
        _ => Err(error(path, "a string or a list of strings")),
    }
}

fn shell_words(line: &str) -> Option<Vec<String>> {
    let (mut words, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n') => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some('"') | None, '\\') => {
                word.push(chars.next()?);
                started = true;
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if started {
        words.push(word);
    }
    Some(words)
}

/// `KEY: value` mappings or `KEY=value` lists (a bare `KEY` in a list is left out: Compose
/// would take it from the shell that runs it, which here is none).
fn pairs(path: &str, value: &Value) -> Read<Vec<(String, String)>> {
    match value {
        Value::Mapping(map) => map
            .iter()
            .map(|(k, v)| {
                let key = key_text(k, path)?;
                let value = if v.is_null() {
                    String::new()
                } else {
                    text(&format!("{path}.{key}"), v)?
                };
                Ok((key, value))
            })
            .collect(),
        Value::Sequence(items) => Ok(items
            .iter()
            .map(|item| text(path, item))
            .collect::<Read<Vec<_>>>()?
            .into_iter()
            .filter_map(|entry| {
                entry
                    .split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect()),
        _ => Err(error(path, "a mapping or a list of KEY=value")),
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

/// A Compose duration: `1m30s`, `10s`, `500ms`, `2h` (or a plain number of seconds).
fn duration(path: &str, value: &Value) -> Read<Duration> {
    let text = text(path, value)?;
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut digits = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            digits.push(c);
            continue;
        }
        let mut unit = c.to_string();
        if c == 'm' && chars.peek() == Some(&'s') {
            unit.push(chars.next().unwrap_or('s'));
        }
        let amount: f64 = digits
            .parse()
            .map_err(|_| error(path, "a duration such as 10s, 1m30s or 500ms"))?;
        digits.clear();
        let seconds = match unit.as_str() {
            "h" => amount * 3600.0,
            "m" => amount * 60.0,
            "s" => amount,
            "ms" => amount / 1000.0,
            _ => return Err(error(path, "a duration such as 10s, 1m30s or 500ms")),
        };
        total += Duration::from_secs_f64(seconds);
    }
    if !digits.is_empty() {
        return Err(error(path, "a duration needs a unit: 10s, 1m30s, 500ms"));
    }
    Ok(total)
}

/// Every `depends_on` names a service, every volume mount a declared volume, and the
/// dependencies have no cycle.
fn check_references(file: &ComposeFile) -> Read<()> {
    let names: Vec<&str> = file.services.iter().map(|s| s.name.as_str()).collect();
    for service in &file.services {
        for dependency in &service.depends_on {
            if !names.contains(&dependency.service.as_str()) {
                return Err(error(
                    &format!("services.{}.depends_on", service.name),
                    format!("no service {}", dependency.service),
                ));
            }
        }
        for mount in &service.volumes {
            if !file.volumes.contains(&mount.volume) {
                return Err(error(
                    &format!("services.{}.volumes", service.name),
                    format!(
                        "volume {} is not declared under the top-level volumes",
                        mount.volume
                    ),
                ));
            }
        }
    }
    start_order(file).map(drop)
}

/// The services in an order that starts every dependency first (file order otherwise).
pub fn start_order(file: &ComposeFile) -> Read<Vec<&Service>> {
    let mut ordered: Vec<&Service> = Vec::new();
    let mut visiting: Vec<&str> = Vec::new();
    fn visit<'f>(
        file: &'f ComposeFile,
        service: &'f Service,
        ordered: &mut Vec<&'f Service>,
        visiting: &mut Vec<&'f str>,
    ) -> Read<()> {
        if ordered.iter().any(|s| s.name == service.name) {
            return Ok(());
        }
        if visiting.contains(&service.name.as_str()) {
            return Err(error(
                &format!("services.{}.depends_on", service.name),
                format!(
                    "a dependency cycle: {} → {}",
                    visiting.join(" → "),
                    service.name
                ),
            ));
        }
        visiting.push(&service.name);
        for dependency in &service.depends_on {
            if let Some(next) = file.services.iter().find(|s| s.name == dependency.service) {
                visit(file, next, ordered, visiting)?;
            }
        }
        visiting.pop();
        ordered.push(service);
        Ok(())
    }
    for service in &file.services {
        visit(file, service, &mut ordered, &mut visiting)?;
    }
    Ok(ordered)
}

/// Replaces `${VAR}`, `${VAR:-default}`, `${VAR-default}` and `$VAR` in every string of the
/// document with `variables`; `$$` is a literal `$`. A variable without a value or default is
/// empty, as Compose makes it.
fn interpolate(value: Value, variables: &HashMap<String, String>, path: &str) -> Read<Value> {
    Ok(match value {
        Value::String(text) => Value::String(substitute(&text, variables, path)?),
        Value::Sequence(items) => Value::Sequence(
            items
                .into_iter()
                .map(|item| interpolate(item, variables, path))
                .collect::<Read<_>>()?,
        ),
        Value::Mapping(map) => {
            let mut out = Mapping::new();
            for (key, item) in map {
                let child = format!("{path}.{}", key.as_str().unwrap_or("?"));
                out.insert(key, interpolate(item, variables, &child)?);
            }
            Value::Mapping(out)
        }
        other => other,
    })
}

fn substitute(text: &str, variables: &HashMap<String, String>, path: &str) -> Read<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(braced) = after.strip_prefix('{') {
            let end = braced
                .find('}')
                .ok_or_else(|| error(path.trim_start_matches('.'), "an unclosed ${"))?;
            let expression = &braced[..end];
            let (name, default) = match expression
                .split_once(":-")
                .or_else(|| expression.split_once('-'))
            {
                Some((name, default)) => (name, Some(default)),
                None => (expression, None),
            };
            let value = variables.get(name).filter(|v| !v.is_empty());
            out.push_str(value.map_or(default.unwrap_or_default(), String::as_str));
            rest = &braced[end + 1..];
        } else {
            let length = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            if length == 0 {
                out.push('$');
            } else {
                out.push_str(variables.get(&after[..length]).map_or("", String::as_str));
            }
            rest = &after[length..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STACK: &str = r#"
name: shop
x-common: &common
  restart: unless-stopped
services:
  web:
    build:
      context: ./web
      args: { VERSION: "${VERSION:-dev}" }
    command: ["httpd", "-f", "-p", "8080"]
    environment:
      DATABASE_URL: postgres://db/app
      GREETING: "${GREETING}"
      PRICE: "$$5"
    depends_on:
      db: { condition: service_healthy }
    <<: *common
  worker:
    image: berth/busybox:1
    command: sh -c 'echo "working" && sleep 3600'
    environment: [QUEUE=jobs, UNSET]
    volumes: ["jobs:/var/jobs", { type: volume, source: jobs, target: /ro, read_only: true }]
    depends_on: [db]
  db:
    image: berth/busybox:1
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      timeout: 1m30s
      retries: 3
volumes:
  jobs:
"#;

    fn variables() -> HashMap<String, String> {
        HashMap::from([("GREETING".to_string(), "hello".to_string())])
    }

    #[test]
    fn a_stack_is_read_with_its_services_volumes_and_order() {
        let file = parse(STACK, &variables()).unwrap();
        let names: Vec<_> = file.services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["web", "worker", "db"]);
        let web = &file.services[0];
        assert_eq!(web.build.as_ref().unwrap().context, "./web");
        assert_eq!(web.build.as_ref().unwrap().args["VERSION"], "dev");
        assert_eq!(web.restart.as_deref(), Some("unless-stopped"));
        assert!(
            web.environment
                .contains(&("GREETING".into(), "hello".into()))
        );
        assert!(web.environment.contains(&("PRICE".into(), "$5".into())));
        assert_eq!(web.depends_on[0].condition, Condition::Healthy);
        let worker = &file.services[1];
        assert_eq!(
            worker.command.as_deref().unwrap(),
            ["sh", "-c", "echo \"working\" && sleep 3600"]
        );
        assert_eq!(
            worker.environment,
            vec![("QUEUE".to_string(), "jobs".to_string())]
        );
        assert!(worker.volumes[1].read_only);
        let db = &file.services[2];
        let check = db.healthcheck.as_ref().unwrap();
        assert_eq!(check.timeout, Some(Duration::from_secs(90)));
        let order: Vec<_> = start_order(&file)
            .unwrap()
            .iter()
            .map(|s| s.name.clone())
            .collect();
        assert_eq!(order, ["db", "web", "worker"]);
        assert_eq!(file.volumes, ["jobs"]);
    }

    #[test]
    fn what_berth_cannot_honour_is_refused_by_path() {
        let cases = [
            (
                "services:\n  web:\n    image: a\n    ports: ['80:80']\n",
                "services.web.ports",
            ),
            (
                "services:\n  web:\n    image: a\n    volumes: ['./data:/data']\n",
                "services.web.volumes[0]",
            ),
            (
                "services:\n  web:\n    image: a\n    container_name: x\n",
                "services.web.container_name",
            ),
            ("services:\n  web:\n    command: x\n", "services.web"),
            (
                "services:\n  web:\n    image: a\n    depends_on: [db]\n",
                "services.web.depends_on",
            ),
            (
                "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n",
                "services.a.depends_on",
            ),
            (
                "services:\n  web:\n    image: a\nnetworks:\n  front: {}\n",
                "networks",
            ),
            ("services:\n  Web:\n    image: a\n", "services.Web"),
            (
                "services:\n  web:\n    image: a\n    volumes: ['data:/d']\n",
                "services.web.volumes",
            ),
            (
                "volumes:\n  data:\n    driver: nfs\nservices:\n  web:\n    image: a\n",
                "volumes.data",
            ),
            ("services: {}\n", "services"),
        ];
        for (text, path) in cases {
            let refused = parse(text, &HashMap::new()).unwrap_err();
            assert_eq!(refused.path, path, "{text}: {refused}");
        }
    }

    #[test]
    fn durations_read_as_compose_writes_them() {
        let read = |text: &str| duration("d", &Value::String(text.into()));
        assert_eq!(read("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(read("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(read("2h").unwrap(), Duration::from_secs(7200));
        assert!(read("10").is_ok() && read("ten").is_err() && read("5x").is_err());
    }
}
