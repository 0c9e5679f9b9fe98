//! Health records the observation store kept, read back as the wire has them today.

use super::wire_runtime;
use serde_json::Value;

/// A health record the observation store kept, as the wire has it: records written before the
/// wire's rules held `null`s and the controller's own names for some states.
pub fn stored_to_wire(mut summary: Value) -> Value {
    strip_nulls(&mut summary);
    let text = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if let (Some(lifecycle), Some(health)) = (
        text(&summary, "/runtime/lifecycle"),
        text(&summary, "/runtime/health"),
    ) {
        let (lifecycle, health, reason) = wire_runtime(&lifecycle, &health);
        let runtime = &mut summary["runtime"];
        runtime["lifecycle"] = lifecycle.into();
        runtime["health"] = health.into();
        if let (Some(reason), None) = (reason, runtime.get("reasonCode")) {
            runtime["reasonCode"] = reason.into();
        }
    }
    if let Some(deployment) = summary.get_mut("latestDeployment")
        && deployment.get("status").is_none()
    {
        deployment["status"] = "created".into();
    }
    let access_ready = text(&summary, "/publicAccess/status").as_deref() == Some("ready");
    rename(
        &mut summary,
        "/publicAccess/kind",
        "generated",
        "generated-latest",
    );
    let applied = if access_ready { "ready" } else { "applied" };
    rename(
        &mut summary,
        "/publicAccess/routeIntentStatus/proxy/applied",
        "configured",
        applied,
    );
    let summary_status = "/publicAccess/routeIntentStatus/copySafeSummary/status";
    rename(&mut summary, summary_status, "ready", "available");
    rename(&mut summary, "/proxy/status", "disabled", "not-configured");
    let errors = summary
        .get("sourceErrors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    summary["sourceErrors"] = errors.into_iter().map(stored_source_error).collect();
    summary
}

/// Replaces the string at `pointer` when it is `from`.
fn rename(value: &mut Value, pointer: &str, from: &str, to: &str) {
    if let Some(slot) = value.pointer_mut(pointer)
        && slot == from
    {
        *slot = to.into();
    }
}

/// A `sourceErrors` entry written before the wire's rules (`retryable`, sources of its own).
fn stored_source_error(mut error: Value) -> Value {
    let Some(object) = error.as_object_mut() else {
        return error;
    };
    if let Some(retryable) = object.remove("retryable") {
        object.entry("retriable").or_insert(retryable);
    }
    let source = match object.get("source").and_then(Value::as_str) {
        Some("server") => Some("runtime"),
        Some("access-failure-evidence") => Some("public-access"),
        _ => None,
    };
    if let Some(source) = source {
        object.insert("source".into(), source.into());
    }
    object.entry("category").or_insert("infra".into());
    object.entry("phase").or_insert("health-read".into());
    error
}

/// Removes every `null` member, at any depth.
fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|_, member| !member.is_null());
            members.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}
