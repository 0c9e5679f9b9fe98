//! The effective configuration: the resource's own entries merged over its environment's, in
//! the precedence order of the platform (later wins), masked.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use kube::ResourceExt;
use schemars::JsonSchema;
use serde::Serialize;

use super::super::Endpoint;
use super::super::common::known_params;
use super::super::environments;
use super::lookup;
use super::secrets::now;
use super::variables::{VariableEntry, owned_entries, plain_entry};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::get::<EffectiveConfig, _, _>(
        "/resources/{resourceId}/effective-config",
        "Show the effective configuration (masked)",
        show,
    )]
}

/// Scopes from weakest to strongest: a later scope's entry replaces an earlier one.
pub const PRECEDENCE: [&str; 7] = [
    "defaults",
    "system",
    "organization",
    "project",
    "environment",
    "resource",
    "deployment",
];

/// Effective config of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveConfig {
    /// `resources.effective-config/v1`.
    pub schema_version: &'static str,
    pub resource_id: String,
    /// The environment whose entries were merged (the preview one when asked).
    pub environment_id: String,
    /// Entries the resource defines itself.
    pub owned_entries: Vec<VariableEntry>,
    /// What the next deployment gets: one entry per key and exposure, from the strongest scope.
    pub effective_entries: Vec<VariableEntry>,
    /// Entries hidden by a stronger scope.
    pub overrides: Vec<Override>,
    /// Scope names, weakest first.
    pub precedence: Vec<&'static str>,
    pub generated_at: String,
}

/// One entry replaced by a stronger scope.
#[derive(Serialize, JsonSchema, Clone)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    pub key: String,
    pub exposure: String,
    /// Scope whose entry is used.
    pub winning_scope: String,
    /// Scope whose entry is hidden.
    pub overridden_scope: String,
}

/// Merges entries given weakest scope first into the effective ones and the overrides.
pub fn merge(layers: Vec<VariableEntry>) -> (Vec<VariableEntry>, Vec<Override>) {
    let mut effective: BTreeMap<(String, String), VariableEntry> = BTreeMap::new();
    let mut overrides = Vec::new();
    for entry in layers {
        let slot = (entry.exposure.clone(), entry.key.clone());
        if let Some(previous) = effective.get(&slot) {
            overrides.push(Override {
                key: entry.key.clone(),
                exposure: entry.exposure.clone(),
                winning_scope: entry.scope.clone(),
                overridden_scope: previous.scope.clone(),
            });
        }
        effective.insert(slot, entry);
    }
    (effective.into_values().collect(), overrides)
}

fn rank(scope: &str) -> usize {
    PRECEDENCE.iter().position(|s| *s == scope).unwrap_or(0)
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<EffectiveConfig>> {
    known_params(&query, &["previewEnvironmentId"])?;
    let resource = lookup(&state, &caller, &id)?;
    let environment_id = match query.string("previewEnvironmentId")? {
        Some(preview) => {
            let environment = environments::lookup(&state, &caller, preview)?;
            if environment.spec.project_id != resource.spec.project_id {
                return Err(ApiError::validation(
                    "previewEnvironmentId",
                    "previewEnvironmentId must name an environment of the resource's project",
                ));
            }
            preview.to_string()
        }
        None => resource.spec.environment_id.clone(),
    };
    // A resource written by hand may name an environment that is gone; it contributes nothing.
    let environment_entries: Vec<VariableEntry> =
        environments::lookup(&state, &caller, &environment_id)
            .map(|environment| {
                environment
                    .spec
                    .variables
                    .iter()
                    .map(|v| plain_entry(&resource.name_any(), "environment", v))
                    .collect()
            })
            .unwrap_or_default();
    let owned = owned_entries(&state, &resource).await?;
    let mut layers: Vec<VariableEntry> = environment_entries;
    layers.extend(owned.iter().cloned());
    layers.sort_by_key(|entry| rank(&entry.scope));
    let (effective_entries, overrides) = merge(layers);
    Ok(Json(EffectiveConfig {
        schema_version: "resources.effective-config/v1",
        resource_id: id,
        environment_id,
        owned_entries: owned,
        effective_entries,
        overrides,
        precedence: PRECEDENCE.to_vec(),
        generated_at: now(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(scope: &str, key: &str, value: &str) -> VariableEntry {
        VariableEntry {
            resource_id: "res-1".into(),
            key: key.into(),
            value: value.into(),
            scope: scope.into(),
            exposure: "runtime".into(),
            is_secret: false,
            kind: "plain-config".into(),
            updated_at: None,
        }
    }

    #[test]
    fn later_scopes_win_and_are_reported() {
        let (effective, overrides) = merge(vec![
            entry("environment", "A", "env"),
            entry("environment", "B", "env"),
            entry("resource", "A", "res"),
        ]);
        let a = effective.iter().find(|e| e.key == "A").unwrap();
        assert_eq!((a.value.as_str(), a.scope.as_str()), ("res", "resource"));
        assert_eq!(effective.len(), 2);
        assert_eq!(overrides.len(), 1);
        assert_eq!(overrides[0].overridden_scope, "environment");
        assert!(rank("resource") > rank("environment"));
    }
}
