//! The part of the Compose specification a stack on one Berth server can honour, read from a
//! Compose file: services built or pulled, their command, environment (and `env_file`), named
//! volumes, `depends_on` with its conditions, health checks, restart policy, user, working
//! directory, exposed ports and labels. Anything else is refused by its path
//! (`services.web.ports`), with what to do instead: never read and silently ignored.
//! `${VAR}`, `${VAR:-default}` and `$$` are interpolated from the resource's configuration.
//!
//! `service` reads one service, `values` the shapes its values take, `interpolate` the `${…}`
//! substitution.

mod interpolate;
mod service;
#[cfg(test)]
mod tests;
mod values;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_yaml::{Mapping, Value};

use self::interpolate::interpolate;
use self::service::service;

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
