//! An environment's variables over REST: plain ones in its spec, secret ones in the Secret it
//! owns (`domain::environment_secrets`), one entry per key and exposure.

use axum::extract::{Path, State};
use berth_api::environments::{SetEnvironmentVariable, UnsetEnvironmentVariable};
use berth_crds::environment::Environment;
use berth_crds::member::OrganizationRole;
use berth_crds::variable::{PlainVariable, VariableExposure};
use serde_json::Map;

use super::{api, require_unlocked};
use crate::auth::Caller;
use crate::domain::environment_secrets;
use crate::domain::environments::lookup;
use crate::domain::spec_variables::VariablesWrite;
use crate::domain::variables::{exposure_name, parse_exposure, validate_key};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

/// Writes `variables` as the environment's (the shim's entries; kubectl's stay theirs).
pub(super) async fn save_variables(
    state: &AppState,
    caller: &Caller,
    environment: &Environment,
    variables: &[PlainVariable],
) -> ApiResult<Environment> {
    let api = api(state, caller)?;
    let write = VariablesWrite {
        api: &api,
        store: &state.caches.environments,
        variables: |e: &Environment| e.spec.variables.clone(),
    };
    write.save(caller, environment, variables, Map::new()).await
}

pub(super) async fn set_variable(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetEnvironmentVariable>,
) -> ApiResult<Json<()>> {
    validate_key("key", &body.key)?;
    bounded_value(&body.value)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    let secret = body.is_secret == Some(true) || body.kind.as_deref() == Some("secret");
    match body.kind.as_deref() {
        None | Some("plain-config" | "secret") => {}
        Some(_) => {
            return Err(ApiError::validation(
                "kind",
                "kind must be plain-config or secret",
            ));
        }
    }
    if body.scope.as_deref().is_some_and(|s| s != "environment") {
        return Err(ApiError::validation("scope", "scope must be environment"));
    }
    caller.require_role(OrganizationRole::Member)?;
    let environment = lookup(&state, &caller, &id)?;
    require_unlocked(&environment)?;
    // One entry per key and exposure: a secret replaces a plain one and the other way round.
    let plain = without(&environment, &body.key, exposure);
    let secrets = environment_secrets::values(&environment);
    if secret {
        let change = (exposure, body.key.clone(), Some(body.value));
        let before = secrets.write(&state, &[change]).await?;
        if let Err(error) = save_if_changed(&state, &caller, &environment, &plain).await {
            secrets.restore(&state, before).await;
            return Err(error);
        }
    } else {
        let mut variables = plain;
        variables.push(PlainVariable {
            key: body.key.clone(),
            value: body.value,
            exposure,
        });
        save_variables(&state, &caller, &environment, &variables).await?;
        remove_secret(&state, &environment, &body.key, exposure).await?;
    }
    tracing::info!(environment = %id, key = %body.key, secret, "environment variable set");
    Ok(Json(()))
}

/// The environment's plain variables but `key` of `exposure`.
fn without(environment: &Environment, key: &str, exposure: VariableExposure) -> Vec<PlainVariable> {
    environment
        .spec
        .variables
        .iter()
        .filter(|v| !(v.key == key && v.exposure == exposure))
        .cloned()
        .collect()
}

/// Writes `variables` unless they are the environment's already.
async fn save_if_changed(
    state: &AppState,
    caller: &Caller,
    environment: &Environment,
    variables: &[PlainVariable],
) -> ApiResult<()> {
    if variables.len() != environment.spec.variables.len() {
        save_variables(state, caller, environment, variables).await?;
    }
    Ok(())
}

/// Removes the secret entry `key` of `exposure`; whether there was one.
async fn remove_secret(
    state: &AppState,
    environment: &Environment,
    key: &str,
    exposure: VariableExposure,
) -> ApiResult<bool> {
    let secrets = environment_secrets::values(environment);
    let data_key = berth_crds::variable::secret_data_key(exposure, key);
    let held = secrets
        .fetch(state)
        .await?
        .and_then(|s| s.data)
        .is_some_and(|data| data.contains_key(&data_key));
    if held {
        secrets
            .write(state, &[(exposure, key.to_string(), None)])
            .await?;
    }
    Ok(held)
}

/// Values are free text (line breaks allowed), bounded like a resource's.
fn bounded_value(value: &str) -> ApiResult<()> {
    const VALUE_MAX: usize = 32 * 1024;
    if value.len() > VALUE_MAX {
        return Err(ApiError::validation(
            "value",
            format!("value must be at most {VALUE_MAX} bytes"),
        ));
    }
    Ok(())
}

pub(super) async fn unset_variable(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    JsonBody(body): JsonBody<UnsetEnvironmentVariable>,
) -> ApiResult<Json<()>> {
    validate_key("key", &key)?;
    let exposure = parse_exposure(body.exposure.as_deref())?;
    if body.scope.as_deref().is_some_and(|s| s != "environment") {
        return Err(ApiError::validation("scope", "scope must be environment"));
    }
    caller.require_role(OrganizationRole::Member)?;
    let environment = lookup(&state, &caller, &id)?;
    require_unlocked(&environment)?;
    let plain = without(&environment, &key, exposure);
    let had_plain = plain.len() != environment.spec.variables.len();
    save_if_changed(&state, &caller, &environment, &plain).await?;
    let had_secret = remove_secret(&state, &environment, &key, exposure).await?;
    if !had_plain && !had_secret {
        return Err(ApiError::not_found(
            "variable",
            &format!("{key} ({})", exposure_name(exposure)),
        ));
    }
    Ok(Json(()))
}
