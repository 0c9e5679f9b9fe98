//! Ports, health checks and the Compose features that change behaviour if dropped.

use berth_api::validate::FieldError;
use serde_json::Value;

use crate::adapters::draft::Draft;
use crate::adapters::fields::Obj;

/// The container port of the first `ports` entry; more than one port (or a range) blocks.
pub(super) fn ports(
    obj: &mut Obj,
    name: &str,
    draft: &mut Draft,
) -> Result<Option<u16>, FieldError> {
    let Some(items) = obj.arr("ports")? else {
        return Ok(None);
    };
    let mut ports = Vec::new();
    for item in items {
        let container = match item {
            Value::Number(n) => n.to_string(),
            Value::String(short) => {
                let spec = short.split('/').next().unwrap_or("");
                spec.rsplit(':').next().unwrap_or("").to_string()
            }
            Value::Object(map) => map
                .get("target")
                .map(|t| t.to_string().trim_matches('"').to_string())
                .unwrap_or_default(),
            _ => String::new(),
        };
        if container.contains('-') {
            ports.extend(["range".to_string(), container]);
            continue;
        }
        ports.push(container);
    }
    if ports.len() > 1 {
        draft.block(
            "compose_multiple_ports",
            obj.at("ports"),
            format!("Service {name} publishes more than one port; a Berth resource routes to one."),
        );
    }
    let first = ports
        .iter()
        .find_map(|p| p.parse::<u16>().ok().filter(|p| *p > 0));
    match (first, ports.is_empty()) {
        (None, false) => Err(obj.wrong("ports", "container ports (1-65535)")),
        (port, _) => Ok(port),
    }
}

/// The first `expose` port (reachable by other services, not published).
pub(super) fn expose(obj: &mut Obj) -> Result<Option<u16>, FieldError> {
    let Some(items) = obj.arr("expose")? else {
        return Ok(None);
    };
    Ok(items.iter().find_map(|item| {
        let text = item
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| item.to_string());
        text.split('/').next()?.parse::<u16>().ok()
    }))
}

/// `healthcheck.test` → a path when it is curl/wget of an HTTP URL on localhost.
pub(super) fn healthcheck(obj: &mut Obj, draft: &mut Draft) -> Result<Option<String>, FieldError> {
    let Some(mut check) = obj.obj("healthcheck")? else {
        return Ok(None);
    };
    let words: Vec<String> = match check.get("test") {
        Some(Value::String(line)) => line.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .filter(|w| !matches!(*w, "CMD" | "CMD-SHELL"))
            .flat_map(|w| w.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect(),
        _ => Vec::new(),
    };
    let path = http_path(&words);
    if path.is_none() {
        draft.warn(format!(
            "{}: {}.test is not an HTTP request to localhost and is not migrated.",
            check.file, check.path
        ));
    }
    for key in check.unread() {
        draft.warn(format!(
            "{}: {key} is not migrated: Berth uses its own health check timing.",
            check.file
        ));
    }
    Ok(path)
}

fn http_path(words: &[String]) -> Option<String> {
    let tool = words
        .iter()
        .any(|w| matches!(w.rsplit('/').next(), Some("curl" | "wget")));
    let url = words.iter().find_map(|w| {
        let w = w.trim_matches(['"', '\'']);
        ["http://localhost", "http://127.0.0.1"]
            .iter()
            .find_map(|p| w.strip_prefix(p))
    })?;
    let rest = url.trim_start_matches(|c: char| c == ':' || c.is_ascii_digit());
    let path = if rest.is_empty() { "/" } else { rest };
    (tool && path.starts_with('/')).then(|| path.to_string())
}

/// Replicas, host networking, privileges and devices block; restart, depends_on and labels
/// are warnings.
pub(super) fn behaviour(obj: &mut Obj, name: &str, draft: &mut Draft) -> Result<(), FieldError> {
    if let Some(mut deploy) = obj.obj("deploy")? {
        if deploy.uint("replicas")?.is_some_and(|n| n > 1) {
            draft.block(
                "compose_replicas_require_scale_profile",
                deploy.at("replicas"),
                format!("Service {name} replicas require the R5 scale profile."),
            );
        }
        deploy.warn_unread(draft);
    }
    let blocked = [
        (
            "network_mode",
            "compose_network_mode_unsupported",
            "uses network_mode; Berth gives every resource its own network",
        ),
        (
            "privileged",
            "compose_privileged_unsupported",
            "runs privileged; Berth does not run privileged containers",
        ),
        (
            "cap_add",
            "compose_cap_add_unsupported",
            "adds Linux capabilities; Berth does not grant them",
        ),
        (
            "devices",
            "compose_devices_unsupported",
            "maps host devices; Berth does not",
        ),
    ];
    for (key, code, what) in blocked {
        let set = obj
            .get(key)
            .is_some_and(|v| !matches!(v, Value::Bool(false)));
        if set {
            draft.block(code, obj.at(key), format!("Service {name} {what}."));
        }
    }
    if let Some(policy) = obj
        .str("restart")?
        .filter(|p| !matches!(*p, "always" | "unless-stopped"))
    {
        draft.warn(format!(
            "{}: {} {policy} is not migrated: Berth always restarts a stopped container.",
            obj.file,
            obj.child("restart")
        ));
    }
    if let Some(depends) = obj.get("depends_on") {
        let healthy = depends.to_string().contains("service_healthy");
        let extra = if healthy {
            " (including its service_healthy conditions)"
        } else {
            ""
        };
        draft.warn(format!(
            "{}: {}{extra} is not migrated: Berth deploys each resource on its own.",
            obj.file,
            obj.child("depends_on")
        ));
    }
    if let Some(labels) = obj.get("labels") {
        let text = labels.to_string().to_ascii_lowercase();
        let routing = if text.contains("traefik") || text.contains("caddy") {
            " (their proxy host rules too: add those hosts as domains)"
        } else {
            ""
        };
        draft.warn(format!(
            "{}: {} are not migrated{routing}.",
            obj.file,
            obj.child("labels")
        ));
    }
    Ok(())
}
