//! The effective configuration: entries of every scope (platform defaults, system facts,
//! organization, project, environment, resource) merged in the platform's precedence order
//! (later wins), masked. The same merge (berth_crds::config) feeds the controller, so what is
//! shown is what the next deployment's container gets; only the `deployment` scope
//! (`BERTH_DEPLOYMENT_ID` and per-attempt overrides) is added when an attempt starts.

use axum::extract::{Path, State};
use berth_crds::config::{self, ConfigEntry, ConfigOverride, ConfigScope, Scopes, merge};
use berth_crds::masking::MASK;
use berth_crds::organization::Organization;
use berth_crds::resource::Resource;
use berth_crds::variable::PlainVariable;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use super::super::Endpoint;
use super::secret_store::now;
use super::variables::{VariableEntry, owned_entries, plain_entry};
use super::{lookup, secret_store};
use crate::auth::Caller;
use crate::domain::environment_secrets;
use crate::domain::environments;
use crate::domain::previews::{PREVIEW_PARAM, ReadSubject, read_subject};
use crate::domain::projects;
use crate::error::ApiResult;
use crate::extract::{QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::variables::{EffectiveConfig, Override};

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::get::<EffectiveConfig, _, _>(
        "/resources/{resourceId}/effective-config",
        "Show the effective configuration (masked; query: previewEnvironmentId: a preview \
         environment of the resource, whose copy's configuration is then shown)",
        show,
    )]
}

/// An entry of any scope as the API shows it: secret values and secret-looking plain values
/// masked.
fn shown(resource_id: &str, entry: &ConfigEntry) -> VariableEntry {
    if entry.secret {
        return VariableEntry {
            resource_id: resource_id.to_string(),
            key: entry.key.clone(),
            value: MASK.to_string(),
            scope: entry.scope.as_str().to_string(),
            exposure: entry.exposure.as_str().to_string(),
            is_secret: true,
            kind: "secret".into(),
            updated_at: None,
        };
    }
    let variable = PlainVariable {
        key: entry.key.clone(),
        value: entry.value.clone(),
        exposure: entry.exposure,
    };
    plain_entry(resource_id, entry.scope.as_str(), &variable)
}

/// Every entry of the scopes known before a deployment starts, unmerged.
async fn scope_entries(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    environment_id: &str,
) -> ApiResult<Vec<ConfigEntry>> {
    let organization = caller.organization()?;
    let organization = state
        .caches
        .organizations
        .get(&ObjectRef::<Organization>::new(&organization.id));
    let project = projects::lookup(state, caller, &resource.spec.project_id).ok();
    // A resource written by hand may name an environment that is gone; it contributes nothing.
    let environment = environments::lookup(state, caller, environment_id).ok();
    let secret = secret_store::fetch(state, resource).await?;
    let environment_secret = match &environment {
        Some(environment) => {
            environment_secrets::values(environment)
                .fetch(state)
                .await?
        }
        None => None,
    };
    // Shown masked anyway: a bound dependency's URL is never read here.
    let connections = resource
        .spec
        .dependency_bindings
        .iter()
        .map(|b| (b.dependency_resource_id.clone(), MASK.to_string()))
        .collect();
    Ok(config::scope_entries(&Scopes {
        resource,
        organization: organization.as_deref(),
        project: project.as_deref(),
        environment: environment.as_deref(),
        secret_data: secret.as_ref().and_then(|s| s.data.as_ref()),
        environment_secret_data: environment_secret.as_ref().and_then(|s| s.data.as_ref()),
        connections: &connections,
    }))
}

/// The merge's hidden entries grouped per key and exposure: the scope used (the effective
/// entry's) and every scope it hides, weakest first.
fn overrides(hidden: &[ConfigOverride], effective: &[VariableEntry]) -> Vec<Override> {
    let mut grouped: Vec<Override> = Vec::new();
    for hidden in hidden {
        let exposure = hidden.exposure.as_str();
        let overridden = hidden.overridden_scope.as_str().to_string();
        if let Some(group) = grouped
            .iter_mut()
            .find(|g| g.key == hidden.key && g.exposure == exposure)
        {
            group.overridden_scopes.push(overridden);
            continue;
        }
        let selected = effective
            .iter()
            .find(|e| e.key == hidden.key && e.exposure == exposure)
            .map_or_else(
                || hidden.winning_scope.as_str().to_string(),
                |e| e.scope.clone(),
            );
        grouped.push(Override {
            key: hidden.key.clone(),
            exposure: exposure.to_string(),
            selected_scope: selected,
            overridden_scopes: vec![overridden],
        });
    }
    grouped
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<EffectiveConfig>> {
    known_params(&query, &[PREVIEW_PARAM])?;
    let resource = lookup(&state, &caller, &id)?;
    let preview = query.string(PREVIEW_PARAM)?;
    let ReadSubject {
        resource,
        environment_id,
    } = read_subject(&state, &caller, resource, preview)?;
    // A preview's copy answers as itself.
    let id = resource.name_any();
    let owned = owned_entries(&state, &resource).await?;
    let (effective, hidden) =
        merge(scope_entries(&state, &caller, &resource, &environment_id).await?);
    let effective_entries: Vec<_> = effective
        .iter()
        .map(|entry| {
            let mut shown = shown(&id, entry);
            // Resource entries carry when they were last written.
            shown.updated_at = owned
                .iter()
                .find(|o| {
                    o.key == shown.key && o.exposure == shown.exposure && o.scope == shown.scope
                })
                .and_then(|o| o.updated_at.clone());
            shown
        })
        .collect();
    let overrides = overrides(&hidden, &effective_entries);
    Ok(Json(EffectiveConfig {
        schema_version: "resources.effective-config/v1".into(),
        resource_id: id,
        environment_id,
        owned_entries: owned,
        effective_entries,
        overrides,
        precedence: ConfigScope::PRECEDENCE.map(|s| s.as_str().into()).to_vec(),
        generated_at: now(),
    }))
}
