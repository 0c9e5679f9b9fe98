//! Secret variables: list, show, create, rotate, delete. Values live only in the Resource's
//! Secret (`secret_store`); every read shows `****`.

use axum::extract::{Path, State};
use berth_crds::resource::Resource;
use berth_crds::variable::VariableExposure;

use super::super::Endpoint;
use super::secret_store::{entries, fetch, now};
use super::variables::{Change, VariableEntry, apply_changes};
use super::{lookup, lookup_writable};
use crate::auth::Caller;
use crate::domain::variables::{exposure_name, parse_exposure, validate_key};
use crate::error::{ApiError, ApiResult};
use crate::extract::{KeyBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::secrets::{CreateSecret, DeleteSecret, RotateSecret, SecretList, SecretShow};

pub use berth_api::secrets::SecretRef;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<SecretList, _, _>(
            "/resources/{resourceId}/secrets",
            "List a resource's secrets (values masked)",
            list,
        ),
        Endpoint::post::<CreateSecret, SecretRef, _, _>(
            "/resources/{resourceId}/secrets",
            "Create a secret (the value is never returned)",
            create,
        ),
        Endpoint::get::<SecretShow, _, _>(
            "/resources/{resourceId}/secrets/{key}",
            "Show one secret (value masked)",
            show,
        ),
        Endpoint::post::<RotateSecret, SecretRef, _, _>(
            "/resources/{resourceId}/secrets/{key}",
            "Rotate an existing secret's value",
            rotate,
        ),
        Endpoint::delete::<DeleteSecret, SecretRef, _, _>(
            "/resources/{resourceId}/secrets/{key}",
            "Delete a secret",
            delete,
        ),
    ]
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<SecretList>> {
    known_params(&query, &["exposure"])?;
    let exposure = parse_exposure(query.string("exposure")?)?;
    let resource = lookup(&state, &caller, &id)?;
    let secret = fetch(&state, &resource).await?;
    let items = entries(&resource, secret.as_ref())
        .into_iter()
        .filter(|e| e.exposure == exposure_name(exposure))
        .collect();
    Ok(Json(SecretList {
        schema_version: "resources.secrets.list/v1".into(),
        resource_id: id,
        items,
        generated_at: now(),
    }))
}

/// The masked entry of `key`, or 404.
async fn existing(
    state: &AppState,
    resource: &Resource,
    exposure: VariableExposure,
    key: &str,
) -> ApiResult<VariableEntry> {
    let secret = fetch(state, resource).await?;
    entries(resource, secret.as_ref())
        .into_iter()
        .find(|e| e.key == key && e.exposure == exposure_name(exposure))
        .ok_or_else(|| ApiError::not_found("secret", key))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    query: QueryParams,
) -> ApiResult<Json<SecretShow>> {
    known_params(&query, &["exposure"])?;
    let exposure = parse_exposure(query.string("exposure")?)?;
    let resource = lookup(&state, &caller, &id)?;
    let secret = existing(&state, &resource, exposure, &key).await?;
    Ok(Json(SecretShow {
        schema_version: "resources.secrets.show/v1".into(),
        secret,
        generated_at: now(),
    }))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    KeyBody(body): KeyBody<CreateSecret>,
) -> ApiResult<Json<SecretRef>> {
    let resource = lookup_writable(&state, &caller, &id)?;
    super::variables::require_writer(&caller, &id)?;
    validate_key("key", &body.key)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    if existing(&state, &resource, exposure, &body.key)
        .await
        .is_ok()
    {
        return Err(ApiError::conflict(format!(
            "secret {} already exists; rotate it with POST /resources/{id}/secrets/{}",
            body.key, body.key
        ))
        .with_detail("field", "key"));
    }
    let change = Change::secret(exposure, &body.key, Some(body.value));
    apply_changes(&state, &caller, &resource, vec![change]).await?;
    Ok(Json(reference(id, body.key, exposure)))
}

async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    KeyBody(body): KeyBody<RotateSecret>,
) -> ApiResult<Json<SecretRef>> {
    let resource = lookup_writable(&state, &caller, &id)?;
    super::variables::require_writer(&caller, &id)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    existing(&state, &resource, exposure, &key).await?;
    let change = Change::secret(exposure, &key, Some(body.value));
    apply_changes(&state, &caller, &resource, vec![change]).await?;
    Ok(Json(reference(id, key, exposure)))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    KeyBody(body): KeyBody<DeleteSecret>,
) -> ApiResult<Json<SecretRef>> {
    let resource = lookup_writable(&state, &caller, &id)?;
    super::variables::require_writer(&caller, &id)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    existing(&state, &resource, exposure, &key).await?;
    let change = Change::secret(exposure, &key, None);
    apply_changes(&state, &caller, &resource, vec![change]).await?;
    Ok(Json(reference(id, key, exposure)))
}

fn reference(resource_id: String, key: String, exposure: VariableExposure) -> SecretRef {
    SecretRef {
        resource_id,
        key,
        exposure: exposure_name(exposure).into(),
    }
}
