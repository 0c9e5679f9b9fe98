//! Spec §4.2, deploy tokens: list, create, show, rotate, revoke. The secret is returned only by
//! create and rotate; the DeployToken object holds its SHA-256 digest and last characters.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_crds::deploy_token::{DeployToken, DeployTokenScope, DeployTokenSpec, DeployTokenState};
use berth_crds::limits::{DEPLOY_TOKEN_LIST_LIMIT_MAX, OBJECT_NAME_MAX};
use berth_crds::member::OrganizationRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::Endpoint;
use crate::auth::{Caller, CallerOrganization, Principal, check_token_usable, user_organization};
use crate::domain::fields::{bounded, confirm};
use crate::domain::objects::{all_in, find_in};
use crate::domain::time::{created_at, parse_timestamp, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::{self, new_id};
use crate::write::{apply, merge_status};

pub use berth_api::deploy_tokens::{
    ConfirmedAction, CreateToken, CreatedToken, RevokedToken, RotatedToken, ScopeInput, TokenList,
    TokenRecord,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<TokenList, _, _>("/deploy-tokens", "List deploy tokens", list),
        Endpoint::post::<CreateToken, CreatedToken, _, _>(
            "/deploy-tokens",
            "Create a deploy token (its secret is returned only here)",
            create,
        ),
        Endpoint::get::<TokenRecord, _, _>("/deploy-tokens/{tokenId}", "Show a deploy token", show),
        Endpoint::post::<ConfirmedAction, RotatedToken, _, _>(
            "/deploy-tokens/{tokenId}/rotate",
            "Issue a new secret; the old one is refused at once",
            rotate,
        ),
        Endpoint::post::<ConfirmedAction, RevokedToken, _, _>(
            "/deploy-tokens/{tokenId}/revoke",
            "Revoke a deploy token; it is refused from the next request on",
            revoke,
        ),
    ]
}

/// Largest `limit` of `GET /deploy-tokens` (spec §8); also the default.
pub const MAX_LIMIT: u64 = DEPLOY_TOKEN_LIST_LIMIT_MAX;

/// Managing tokens needs a signed-in admin (or owner) of `organization_id`. It need not be the
/// caller's current organization; one the caller is not a member of is a 404 that reveals
/// nothing, whether or not it exists.
fn manager(
    state: &AppState,
    caller: &Caller,
    organization_id: &str,
) -> ApiResult<CallerOrganization> {
    bounded("organizationId", organization_id, OBJECT_NAME_MAX)?;
    let not_found = || ApiError::not_found("organization", organization_id);
    let Principal::User { user_id, .. } = &caller.principal else {
        // A deploy token exists only inside its own organization, and cannot manage tokens.
        return match &caller.organization {
            Some(own) if own.id == organization_id => Err(ApiError::forbidden(
                "deploy tokens cannot manage deploy tokens; sign in as an admin",
            )),
            _ => Err(not_found()),
        };
    };
    let organization = user_organization(state, user_id, Some(organization_id))
        .filter(|o| o.id == organization_id)
        .ok_or_else(not_found)?;
    let acting = Caller {
        principal: caller.principal.clone(),
        organization: Some(organization),
    };
    Ok(acting.require_role(OrganizationRole::Admin)?.clone())
}

/// The scope as stored: each array without repeats (`ScopeInput::validate` checked it).
fn scope_of(input: ScopeInput) -> DeployTokenScope {
    let clean = |ids: Vec<String>| {
        let mut out: Vec<String> = Vec::with_capacity(ids.len());
        for id in ids {
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    };
    DeployTokenScope {
        deployment_target_ids: clean(input.deployment_target_ids),
        environment_ids: clean(input.environment_ids),
        project_ids: clean(input.project_ids),
        repository_full_names: clean(input.repository_full_names),
        resource_ids: clean(input.resource_ids),
        workflow_commands: clean(input.workflow_commands),
    }
}

/// `active` or `revoked`, from the spec flag (the truth the moment it is written).
fn state_of(token: &DeployToken) -> DeployTokenState {
    if token.spec.revoked {
        DeployTokenState::Revoked
    } else {
        DeployTokenState::Active
    }
}

fn state_name(state: DeployTokenState) -> &'static str {
    match state {
        DeployTokenState::Active => "active",
        DeployTokenState::Revoked => "revoked",
    }
}

/// Converts the custom resource to the REST record.
pub fn record(token: &DeployToken, organization_id: &str) -> TokenRecord {
    let status = token.status.clone().unwrap_or_default();
    TokenRecord {
        token_id: token.name_any(),
        organization_id: organization_id.to_string(),
        display_name: token.spec.display_name.clone(),
        status: state_name(state_of(token)).to_string(),
        secret_suffix: token.spec.secret_suffix.clone(),
        scope: token.spec.scope.clone(),
        created_at: created_at(&token.metadata),
        expires_at: token.spec.expires_at.as_ref().map(timestamp),
        last_used_at: status.last_used_at.as_ref().map(timestamp),
        rotated_at: status.rotated_at.as_ref().map(timestamp),
        revoked_at: status.revoked_at.as_ref().map(timestamp),
    }
}

/// Now, in whole seconds: the API server stores `metav1.Time` at second precision, and the
/// time a response reports must equal what later reads show.
fn now() -> Time {
    Time(Timestamp::from_second(Timestamp::now().as_second()).expect("now is in range"))
}

fn api(state: &AppState, namespace: &str) -> Api<DeployToken> {
    Api::namespaced(state.client.clone(), namespace)
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<TokenList>> {
    known_params(
        &query,
        &[
            "organizationId",
            "status",
            "resourceId",
            "repositoryFullName",
            "limit",
        ],
    )?;
    let organization = manager(&state, &caller, query.required("organizationId")?)?;
    let status = query.one_of("status", &["active", "revoked"], None)?;
    let resource = query.string("resourceId")?;
    let repository = query.string("repositoryFullName")?;
    let limit = query.integer("limit", 1, MAX_LIMIT, MAX_LIMIT)?;
    let mut tokens: Vec<Arc<DeployToken>> =
        all_in(&state.caches.deploy_tokens, &organization.namespace)
            .into_iter()
            .filter(|t| status.is_none_or(|s| state_name(state_of(t)) == s))
            // A filter id matches tokens whose scope names it explicitly.
            .filter(|t| resource.is_none_or(|r| t.spec.scope.resource_ids.iter().any(|id| id == r)))
            .filter(|t| {
                repository.is_none_or(|r| {
                    t.spec
                        .scope
                        .repository_full_names
                        .iter()
                        .any(|name| name == r)
                })
            })
            .collect();
    // Newest first: the token just made is the one people look for.
    tokens.sort_by_key(|t| {
        (
            std::cmp::Reverse(t.metadata.creation_timestamp.clone().map(|c| c.0)),
            t.name_any(),
        )
    });
    let items = tokens
        .iter()
        .take(limit as usize)
        .map(|t| record(t, &organization.id))
        .collect();
    Ok(Json(TokenList { items }))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateToken>,
) -> ApiResult<Json<CreatedToken>> {
    let organization = manager(&state, &caller, &body.organization_id)?;
    body.validate()?;
    let scope = scope_of(body.scope);
    let expires_at = match &body.expires_at {
        None => None,
        Some(text) => {
            let at = parse_timestamp("expiresAt", text)?;
            if at.0 <= Timestamp::now() {
                return Err(ApiError::validation(
                    "expiresAt",
                    "expiresAt must be in the future",
                ));
            }
            Some(at)
        }
    };
    let secret = token::generate(token::DEPLOY_TOKEN_PREFIX);
    let id = new_id("dtk");
    let desired = DeployToken::new(
        &id,
        DeployTokenSpec {
            display_name: body.display_name.trim().to_string(),
            scope,
            expires_at,
            revoked: false,
            secret_digest: token::digest(&secret),
            secret_suffix: token::suffix(&secret),
        },
    );
    let api = api(&state, &organization.namespace);
    // berth-controller's bookkeeping writes `status` and `Ready`; the record reads the spec.
    let written = apply(&api, &state.caches.deploy_tokens, Some(&caller), desired).await?;
    tracing::info!(token = %id, organization = %organization.id, "deploy token created");
    Ok(Json(CreatedToken {
        token_id: id,
        token: secret,
        organization_id: organization.id.clone(),
        display_name: written.spec.display_name.clone(),
        secret_suffix: written.spec.secret_suffix.clone(),
        scopes: written.spec.scope.clone(),
        created_at: created_at(&written.metadata),
        expires_at: written.spec.expires_at.as_ref().map(timestamp),
    }))
}

/// `organizationId` of `GET /deploy-tokens/{tokenId}`.
async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<TokenRecord>> {
    known_params(&query, &["organizationId"])?;
    let organization = manager(&state, &caller, query.required("organizationId")?)?;
    let token = find_in(
        &state.caches.deploy_tokens,
        &organization.namespace,
        &id,
        "deploy token",
    )?;
    Ok(Json(record(&token, &organization.id)))
}

/// The token named by the path, after the caller, organization and confirmation checks.
fn confirmed(
    state: &AppState,
    caller: &Caller,
    id: &str,
    body: ConfirmedAction,
) -> ApiResult<(CallerOrganization, Arc<DeployToken>)> {
    let organization = manager(state, caller, &body.organization_id)?;
    let token = find_in(
        &state.caches.deploy_tokens,
        &organization.namespace,
        id,
        "deploy token",
    )?;
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(
        confirmation.token_id.as_deref(),
        id,
        "tokenId",
        "deploy token",
    )?;
    Ok((organization, token))
}

async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ConfirmedAction>,
) -> ApiResult<Json<RotatedToken>> {
    let (organization, token) = confirmed(&state, &caller, &id, body)?;
    if let Err(refused) = check_token_usable(&token) {
        // Rotating would hand out a secret that is refused anyway.
        return Err(ApiError::conflict(format!(
            "{}; create a new token instead",
            refused.body.message
        )));
    }
    let secret = token::generate(token::DEPLOY_TOKEN_PREFIX);
    let mut desired = DeployToken::new(&id, token.spec.clone());
    desired.spec.secret_digest = token::digest(&secret);
    desired.spec.secret_suffix = token::suffix(&secret);
    let api = api(&state, &organization.namespace);
    // Once the cache holds the new digest the old secret matches nothing: refused at once.
    let written = apply(&api, &state.caches.deploy_tokens, Some(&caller), desired).await?;
    let rotated_at = now();
    merge_status(
        &api,
        &state.caches.deploy_tokens,
        &id,
        json!({ "rotatedAt": rotated_at }),
    )
    .await?;
    tracing::info!(token = %id, organization = %organization.id, "deploy token rotated");
    Ok(Json(RotatedToken {
        token_id: id,
        token: secret,
        rotated_at: timestamp(&rotated_at),
        scopes: written.spec.scope.clone(),
    }))
}

async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ConfirmedAction>,
) -> ApiResult<Json<RevokedToken>> {
    let (organization, token) = confirmed(&state, &caller, &id, body)?;
    if token.spec.revoked {
        // Repeating a revocation changes nothing and reports the original time.
        let revoked_at = token
            .status
            .as_ref()
            .and_then(|s| s.revoked_at.as_ref())
            .map(timestamp)
            .unwrap_or_else(|| created_at(&token.metadata));
        return Ok(Json(RevokedToken {
            token_id: id,
            revoked_at,
        }));
    }
    let mut desired = DeployToken::new(&id, token.spec.clone());
    desired.spec.revoked = true;
    let api = api(&state, &organization.namespace);
    apply(&api, &state.caches.deploy_tokens, Some(&caller), desired).await?;
    // The controller stamps `revokedAt` only when it is missing, so the time written here (and
    // returned) is the one every later read shows.
    let revoked_at = now();
    merge_status(
        &api,
        &state.caches.deploy_tokens,
        &id,
        json!({ "revokedAt": revoked_at }),
    )
    .await?;
    tracing::info!(token = %id, organization = %organization.id, "deploy token revoked");
    Ok(Json(RevokedToken {
        token_id: id,
        revoked_at: timestamp(&revoked_at),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(revoked: bool) -> DeployToken {
        DeployToken::new(
            "dtk-1",
            DeployTokenSpec {
                display_name: "CI".into(),
                scope: DeployTokenScope::default(),
                expires_at: None,
                revoked,
                secret_digest: token::digest("bdt_x"),
                secret_suffix: "bd_x".into(),
            },
        )
    }

    #[test]
    fn record_never_carries_the_digest() {
        let text = serde_json::to_string(&record(&token(false), "acme")).unwrap();
        assert!(!text.contains("sha256"));
        assert!(text.contains(r#""status":"active""#));
        assert!(text.contains(r#""scope":{"deploymentTargetIds":[]"#));
    }

    #[test]
    fn scope_entries_are_deduplicated() {
        let scope = scope_of(ScopeInput {
            project_ids: vec!["prj-1".into(), "prj-1".into()],
            ..Default::default()
        });
        assert_eq!(scope.project_ids, vec!["prj-1"]);
    }
}
