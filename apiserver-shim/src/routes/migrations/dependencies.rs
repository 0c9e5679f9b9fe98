//! The dependencies a plan provisions or imports, and binds: whether an earlier run of a step
//! already did it (so a retry creates nothing twice), and how verify judges their health.

use std::sync::Arc;
use std::time::Duration;

use berth_api::dependencies::ReadinessStatus;
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::resource::Resource;
use kube::ResourceExt;
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::domain::dependency_resources::binding_readiness;
use crate::domain::objects::all_in;
use crate::state::AppState;
use crate::token::seeded_id;

/// How long a deployment step waits for the databases its resource binds: a deployment
/// started before they answer would fail (`dependency_not_ready`) and stay failed.
const READY_WAIT: Duration = Duration::from_secs(90);
const READY_POLL: Duration = Duration::from_secs(2);

/// The id an earlier run of a provision, import or bind step made, if it exists; `None` for another
/// operation or when the step has not run yet.
pub fn already_done(
    state: &AppState,
    namespace: &str,
    seed: &str,
    operation_key: &str,
    input: &Map<String, Value>,
) -> Option<String> {
    let text = |name: &str| input.get(name).and_then(Value::as_str).unwrap_or_default();
    match operation_key {
        "dependency-resources.provision" | "dependency-resources.import" => {
            let id = seeded_id(seed, "dep");
            let dependencies = all_in(&state.caches.dependency_resources, namespace);
            provisioned(&dependencies, &id).then_some(id)
        }
        "resources.bind-dependency" => {
            let resources = all_in(&state.caches.resources, namespace);
            let target = text("targetName");
            let bound = bound(
                &resources,
                text("resourceId"),
                text("dependencyResourceId"),
                target,
            );
            bound.then(|| target.to_string())
        }
        _ => None,
    }
}

fn provisioned(dependencies: &[Arc<DependencyResource>], id: &str) -> bool {
    dependencies.iter().any(|d| d.name_any() == id)
}

/// Whether `resource` binds `dependency` as `target` (the same binding, not just the name).
fn bound(resources: &[Arc<Resource>], resource: &str, dependency: &str, target: &str) -> bool {
    resources
        .iter()
        .filter(|r| r.name_any() == resource)
        .flat_map(|r| r.spec.dependency_bindings.iter())
        .any(|b| b.target_name == target && b.dependency_resource_id == dependency)
}

/// Waits until every dependency resource `resource_id` binds can give it a connection; after
/// [`READY_WAIT`], says which one is not ready and why (a retry continues from there).
pub async fn wait_ready(
    state: &AppState,
    namespace: &str,
    resource_id: &str,
) -> Result<(), String> {
    let deadline = Instant::now() + READY_WAIT;
    loop {
        let resources = all_in(&state.caches.resources, namespace);
        let dependencies = all_in(&state.caches.dependency_resources, namespace);
        let Some(why) = not_ready(&resources, &dependencies, resource_id) else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(format!("{why}; resume the migration once it is ready"));
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// The first binding of `resource_id` whose dependency is not ready, and why.
fn not_ready(
    resources: &[Arc<Resource>],
    dependencies: &[Arc<DependencyResource>],
    resource_id: &str,
) -> Option<String> {
    let resource = resources.iter().find(|r| r.name_any() == resource_id)?;
    resource
        .spec
        .dependency_bindings
        .iter()
        .find_map(|binding| {
            let (target, id) = (&binding.target_name, &binding.dependency_resource_id);
            let Some(dependency) = dependencies.iter().find(|d| &d.name_any() == id) else {
                return Some(format!(
                    "{target} is bound to dependency resource {id}, which does not exist"
                ));
            };
            let readiness = binding_readiness(dependency);
            (readiness.status != ReadinessStatus::Ready).then(|| {
                let reason = readiness.reason.unwrap_or_default();
                format!("{target} is bound to dependency resource {id}: {reason}")
            })
        })
}

/// A summary and evaluation of a dependency's show: `ready` passes; `provisioning` is still
/// settling; anything else needs attention, with why (its realization's failure code and the
/// reason apps cannot bind it yet).
pub fn judge_dependency(value: &Value) -> (Map<String, Value>, bool, bool) {
    let facts = value.get("dependencyResource").unwrap_or(value);
    let text = |pointer: &str| facts.pointer(pointer).and_then(Value::as_str);
    let lifecycle = text("/lifecycleStatus").unwrap_or("unknown");
    let mut summary = Map::new();
    for (key, pointer) in [
        ("id", "/id"),
        ("name", "/name"),
        ("kind", "/kind"),
        ("providerStatus", "/providerRealization/status"),
        ("failureCode", "/providerRealization/failureCode"),
        ("reason", "/bindingReadiness/reason"),
    ] {
        if let Some(found) = text(pointer) {
            summary.insert(key.into(), found.into());
        }
    }
    summary.insert("lifecycleStatus".into(), lifecycle.into());
    (summary, lifecycle == "ready", lifecycle == "provisioning")
}

/// A binding's show: ready once its dependency is.
pub fn judge_binding(value: &Value) -> (Map<String, Value>, bool) {
    let facts = value.get("binding").unwrap_or(value);
    let text = |pointer: &str| facts.pointer(pointer).and_then(Value::as_str);
    let status = text("/bindingReadiness/status").unwrap_or("unknown");
    let mut summary = Map::new();
    for (key, pointer) in [
        ("id", "/id"),
        ("dependencyResourceId", "/dependencyResourceId"),
        ("lifecycleStatus", "/lifecycleStatus"),
        ("reason", "/bindingReadiness/reason"),
    ] {
        if let Some(found) = text(pointer) {
            summary.insert(key.into(), found.into());
        }
    }
    summary.insert("bindingReadiness".into(), status.into());
    (summary, status == "ready")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_ready_dependency_passes_and_a_provisioning_one_settles() {
        let ready = json!({"dependencyResource": {"id": "dep-1", "lifecycleStatus": "ready",
            "providerRealization": {"status": "ready"}, "connection": {"maskedConnection": "x"}}});
        let (summary, passed, settling) = judge_dependency(&ready);
        assert!(passed && !settling);
        assert_eq!(summary["providerStatus"], "ready");
        assert!(!summary.contains_key("connection"));
        let provisioning = json!({"dependencyResource": {"lifecycleStatus": "provisioning"}});
        let (_, passed, settling) = judge_dependency(&provisioning);
        assert!(!passed && settling);
        let degraded = json!({"dependencyResource": {"lifecycleStatus": "degraded",
            "providerRealization": {"status": "failed", "failureCode": "ServerFailed"},
            "bindingReadiness": {"status": "blocked", "reason": "the dependency is degraded, not ready"}}});
        let (summary, passed, settling) = judge_dependency(&degraded);
        assert!(!passed && !settling);
        assert_eq!(summary["failureCode"], "ServerFailed");
        assert_eq!(summary["reason"], "the dependency is degraded, not ready");
    }

    #[test]
    fn a_binding_is_ready_once_its_dependency_is() {
        let ready =
            json!({"binding": {"id": "DATABASE_URL", "bindingReadiness": {"status": "ready"}}});
        assert!(judge_binding(&ready).1);
        let blocked = json!({"binding": {"bindingReadiness": {"status": "blocked"}}});
        assert!(!judge_binding(&blocked).1);
    }
}
