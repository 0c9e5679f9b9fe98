//! Retention policies as other areas read them: how long an organization's history of a
//! category is kept.

use std::sync::Arc;

use berth_crds::retention_policy::{RetentionCategory, RetentionPolicy};
use kube::ResourceExt;

use crate::state::AppState;

/// Days an organization's history of `category` is deleted after: its own enabled policy,
/// else the system default, when that one deletes; `None`: nothing deletes it.
pub fn deleted_after_days(
    state: &AppState,
    namespace: &str,
    category: RetentionCategory,
) -> Option<i64> {
    let enabled_in = |ns: &str| {
        policies_of(state, ns)
            .into_iter()
            .find(|p| p.spec.category == category && p.spec.enabled)
    };
    let governing = enabled_in(namespace).or_else(|| enabled_in(&state.config.system_namespace))?;
    governing
        .spec
        .destructive_scheduling_enabled
        .then_some(governing.spec.retention_days)
}

/// The policies of `scope` in its namespace, by category.
pub fn policies_of(state: &AppState, namespace: &str) -> Vec<Arc<RetentionPolicy>> {
    let mut policies: Vec<_> = state
        .caches
        .retention_policies
        .state()
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace))
        .filter(|p| RetentionCategory::parse(&p.name_any()) == Some(p.spec.category))
        .collect();
    policies.sort_by_key(|p| p.spec.category.as_str());
    policies
}
