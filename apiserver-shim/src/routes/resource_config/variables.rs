//! Variables: set, delete and env-file import. Secret-looking keys are stored as secrets (in
//! the Resource's Secret), the rest as plain variables in the Resource spec; a key lives in
//! one place per exposure, so writing it in one store removes it from the other.

use axum::extract::{Path, State};
use berth_crds::masking::MASK;
use berth_crds::masking::looks_secret;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::{Resource, ResourceSpec};
use berth_crds::variable::{PlainVariable, VariableExposure};
use kube::ResourceExt;

use super::super::Endpoint;
use super::import::{ParsedEntry, ParsedFile, parse};
use super::{lookup_writable, secret_store};
use crate::auth::{Caller, ScopeDimension};
use crate::domain::spec_variables::save_variables;
use crate::domain::time::timestamp;
use crate::domain::variables::{exposure_name, parse_exposure, validate_key};
use crate::error::{ApiError, ApiResult};
use crate::extract::KeyBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::variables::{DeleteVariable, ImportVariables, SetVariable, VariableEntry};

pub use berth_api::variables::{DuplicateOverride, ExistingOverride, ImportResult, ImportedEntry};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<SetVariable, (), _, _>(
            "/resources/{resourceId}/variables",
            "Set a variable (secret-looking keys are stored as secrets)",
            set,
        ),
        Endpoint::delete::<DeleteVariable, (), _, _>(
            "/resources/{resourceId}/variables/{key}",
            "Delete a variable",
            delete,
        ),
        Endpoint::post::<ImportVariables, ImportResult, _, _>(
            "/resources/{resourceId}/variables/import",
            "Import env-file text: all entries or none",
            import,
        ),
    ]
}

/// Writes need a member; a deploy token only within its resource scope.
pub fn require_writer(caller: &Caller, resource_id: &str) -> ApiResult<()> {
    caller.require_role(OrganizationRole::Member)?;
    caller.require_in_scope(ScopeDimension::Resource, resource_id)
}

/// One entry to write (`value: None` deletes it).
pub struct Change {
    pub exposure: VariableExposure,
    pub key: String,
    pub value: Option<String>,
    pub secret: bool,
}

impl Change {
    pub fn secret(exposure: VariableExposure, key: &str, value: Option<String>) -> Self {
        Self {
            exposure,
            key: key.to_string(),
            value,
            secret: true,
        }
    }
}

/// A secret value change for the Resource's Secret (`None` removes the entry).
pub type SecretChange = (VariableExposure, String, Option<String>);

/// Applies `changes` to a copy of `spec`'s plain variables and lists what the Secret needs:
/// a key written to one store is removed from the other.
pub fn plan(spec: &ResourceSpec, changes: &[Change]) -> (ResourceSpec, Vec<SecretChange>) {
    let mut spec = spec.clone();
    let mut secret_changes = Vec::new();
    for change in changes {
        let plain = PlainVariable {
            key: change.key.clone(),
            value: change.value.clone().unwrap_or_default(),
            exposure: change.exposure,
        };
        let position = spec
            .variables
            .iter()
            .position(|v| v.key == change.key && v.exposure == change.exposure);
        match (change.secret || change.value.is_none(), position) {
            (true, Some(index)) => {
                spec.variables.remove(index);
            }
            (false, Some(index)) => spec.variables[index] = plain,
            (false, None) => spec.variables.push(plain),
            (true, None) => {}
        }
        let value = change.value.clone().filter(|_| change.secret);
        secret_changes.push((change.exposure, change.key.clone(), value));
    }
    (spec, secret_changes)
}

/// Writes `changes` to the Secret and the Resource spec, all or nothing: the Secret first, and
/// put back if the Resource write then fails.
pub async fn apply_changes(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    changes: Vec<Change>,
) -> ApiResult<()> {
    let (mut spec, secret_changes) = plan(&resource.spec, &changes);
    let touches_secret = changes.iter().any(|c| c.secret && c.value.is_some());
    let before = if touches_secret || spec.secrets_ref.is_some() {
        Some(secret_store::write(state, resource, &secret_changes).await?)
    } else {
        // Deletes of plain keys still clear a same-named secret, if the Secret exists.
        match secret_store::fetch(state, resource).await? {
            Some(_) => Some(secret_store::write(state, resource, &secret_changes).await?),
            None => None,
        }
    };
    if before.is_some() && spec.secrets_ref.is_none() {
        spec.secrets_ref = Some(secret_store::secret_name(resource));
    }
    if spec == resource.spec {
        return Ok(());
    }
    if let Err(error) = save_variables(state, caller, resource, &spec).await {
        if let Some(before) = before {
            secret_store::restore(state, resource, before).await;
        }
        return Err(error);
    }
    Ok(())
}

/// The resource's own entries (plain and secret, both exposures), masked.
pub async fn owned_entries(state: &AppState, resource: &Resource) -> ApiResult<Vec<VariableEntry>> {
    let secret = secret_store::fetch(state, resource).await?;
    let updated = resource
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.time.as_ref())
        .max_by_key(|t| t.0)
        .or(resource.metadata.creation_timestamp.as_ref())
        .map(timestamp);
    let mut entries: Vec<VariableEntry> = resource
        .spec
        .variables
        .iter()
        .map(|variable| {
            let mut entry = plain_entry(&resource.name_any(), "resource", variable);
            entry.updated_at = updated.clone();
            entry
        })
        .collect();
    entries.extend(secret_store::entries(resource, secret.as_ref()));
    Ok(entries)
}

/// A plain variable as an entry; a secret-looking one (written by hand) is masked anyway.
pub fn plain_entry(resource_id: &str, scope: &str, variable: &PlainVariable) -> VariableEntry {
    let secret = looks_secret(&variable.key, &variable.value);
    VariableEntry {
        resource_id: resource_id.to_string(),
        key: variable.key.clone(),
        value: if secret {
            MASK.to_string()
        } else {
            variable.value.clone()
        },
        scope: scope.to_string(),
        exposure: exposure_name(variable.exposure).into(),
        is_secret: secret,
        kind: if secret { "secret" } else { "plain-config" }.into(),
        updated_at: None,
    }
}

async fn set(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    KeyBody(body): KeyBody<SetVariable>,
) -> ApiResult<Json<()>> {
    let resource = lookup_writable(&state, &caller, &id)?;
    require_writer(&caller, &id)?;
    validate_key("key", &body.key)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    let secret = looks_secret(&body.key, &body.value);
    let change = Change {
        exposure,
        key: body.key,
        value: Some(body.value),
        secret,
    };
    apply_changes(&state, &caller, &resource, vec![change]).await?;
    Ok(Json(()))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    KeyBody(body): KeyBody<DeleteVariable>,
) -> ApiResult<Json<()>> {
    let resource = lookup_writable(&state, &caller, &id)?;
    require_writer(&caller, &id)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    let owned = owned_entries(&state, &resource).await?;
    if !owned
        .iter()
        .any(|e| e.key == key && e.exposure == exposure_name(exposure))
    {
        return Err(ApiError::not_found("variable", &key));
    }
    let change = Change {
        exposure,
        key,
        value: None,
        secret: false,
    };
    apply_changes(&state, &caller, &resource, vec![change]).await?;
    Ok(Json(()))
}

async fn import(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    KeyBody(body): KeyBody<ImportVariables>,
) -> ApiResult<Json<ImportResult>> {
    let resource = lookup_writable(&state, &caller, &id)?;
    require_writer(&caller, &id)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    let file = parse_env_file(&body.content)?;
    let owned = owned_entries(&state, &resource).await?;
    let (result, changes) = plan_import(&id, file, &owned, exposure);
    if !changes.is_empty() {
        apply_changes(&state, &caller, &resource, changes).await?;
    }
    Ok(Json(result))
}

/// The entries of an env file; a blank or malformed one is refused (with the line, never its
/// text).
fn parse_env_file(content: &str) -> ApiResult<ParsedFile> {
    if content.trim().is_empty() {
        return Err(ApiError::validation(
            "content",
            "content must hold at least one KEY=value line",
        ));
    }
    parse(content).map_err(|error| {
        ApiError::validation(
            "content",
            format!(
                "line {}: {}; nothing was imported",
                error.line, error.reason
            ),
        )
        .with_detail("line", error.line)
    })
}

/// What importing `file` into resource `id` (which owns `owned`) under `exposure` reports, and
/// the changes that write it.
fn plan_import(
    id: &str,
    file: ParsedFile,
    owned: &[VariableEntry],
    exposure: VariableExposure,
) -> (ImportResult, Vec<Change>) {
    let exposure_text = exposure_name(exposure).to_string();
    let mut result = ImportResult {
        resource_id: id.to_string(),
        imported_entries: Vec::new(),
        duplicate_overrides: file
            .duplicates
            .iter()
            .map(|d| DuplicateOverride {
                key: d.key.clone(),
                exposure: exposure_text.clone(),
                first_line: d.first_line,
                last_line: d.last_line,
                rule: "last-wins".into(),
            })
            .collect(),
        existing_overrides: Vec::new(),
    };
    let mut changes = Vec::new();
    for entry in file.entries {
        let secret = looks_secret(&entry.key, &entry.value);
        let existed = owned
            .iter()
            .any(|e| e.key == entry.key && e.exposure == exposure_text);
        if existed {
            result.existing_overrides.push(ExistingOverride {
                key: entry.key.clone(),
                exposure: exposure_text.clone(),
                previous_scope: "resource".into(),
                rule: "resource-entry-replaced".into(),
            });
        }
        result
            .imported_entries
            .push(imported_entry(&entry, &exposure_text, secret, existed));
        changes.push(Change {
            exposure,
            key: entry.key,
            value: Some(entry.value),
            secret,
        });
    }
    (result, changes)
}

/// How the import result shows `entry`: masked when `secret`, `replaced` when it `existed`.
fn imported_entry(
    entry: &ParsedEntry,
    exposure: &str,
    secret: bool,
    existed: bool,
) -> ImportedEntry {
    ImportedEntry {
        key: entry.key.clone(),
        value: if secret {
            MASK.to_string()
        } else {
            entry.value.clone()
        },
        exposure: exposure.to_string(),
        kind: if secret { "secret" } else { "plain-config" }.into(),
        is_secret: secret,
        action: if existed { "replaced" } else { "created" }.into(),
        source_line: entry.line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(variables: Vec<PlainVariable>) -> ResourceSpec {
        serde_json::from_value(serde_json::json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": "Web",
            "kind": "application", "variables": variables,
        }))
        .unwrap()
    }

    fn plain(key: &str, value: &str) -> PlainVariable {
        PlainVariable {
            key: key.into(),
            value: value.into(),
            exposure: VariableExposure::Runtime,
        }
    }

    #[test]
    fn a_key_lives_in_one_store() {
        let before = spec(vec![plain("API_KEY", "old"), plain("LOG", "info")]);
        let changes = vec![
            Change::secret(VariableExposure::Runtime, "API_KEY", Some("new".into())),
            Change {
                exposure: VariableExposure::Runtime,
                key: "LOG".into(),
                value: Some("debug".into()),
                secret: false,
            },
        ];
        let (after, secrets) = plan(&before, &changes);
        assert_eq!(after.variables, vec![plain("LOG", "debug")]);
        assert_eq!(
            secrets[0],
            (
                VariableExposure::Runtime,
                "API_KEY".into(),
                Some("new".into())
            )
        );
        // A plain write clears a same-named secret.
        assert_eq!(secrets[1], (VariableExposure::Runtime, "LOG".into(), None));
    }

    #[test]
    fn deletes_clear_both_stores_and_exposures_are_separate() {
        let mut build = plain("LOG", "x");
        build.exposure = VariableExposure::BuildTime;
        let before = spec(vec![plain("LOG", "info"), build.clone()]);
        let delete = Change {
            exposure: VariableExposure::Runtime,
            key: "LOG".into(),
            value: None,
            secret: false,
        };
        let (after, secrets) = plan(&before, &[delete]);
        assert_eq!(after.variables, vec![build]);
        assert_eq!(
            secrets,
            vec![(VariableExposure::Runtime, "LOG".into(), None)]
        );
    }
}
