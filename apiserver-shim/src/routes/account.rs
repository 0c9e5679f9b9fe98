//! Spec §4.3, the caller's own account: profile, sessions (list, revoke) and deletion.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_crds::limits::MEMBER_LIST_LIMIT_MAX;
use berth_crds::member::{Member, OrganizationRole};
use berth_crds::session::Session;
use berth_crds::user::User;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::cache::wait_deleted;
use crate::domain::accounts::{FIRST_ADMIN_LABEL, password_secret_name, revoke_session};
use crate::domain::fields::confirm;
use crate::domain::identity::{display_name, image_url, memberships, now, updated_at};
use crate::domain::members::deactivate;
use crate::domain::objects::all_in;
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, paginate};
use crate::json::Json;
use crate::state::AppState;
use crate::write::apply;

pub use berth_api::account::{
    AccountProfile, DeleteAccount, DeletedAccount, RevokeSession, RevokedSession, SessionList,
    SessionRecord, UpdateProfile,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<AccountProfile, _, _>("/account/profile", "Show your profile", profile),
        Endpoint::post::<UpdateProfile, AccountProfile, _, _>(
            "/account/profile",
            "Change your display name or avatar",
            update_profile,
        ),
        Endpoint::get::<SessionList, _, _>(
            "/account/sessions",
            "List your signed-in sessions",
            sessions,
        ),
        Endpoint::post::<RevokeSession, RevokedSession, _, _>(
            "/account/sessions/{sessionId}/revoke",
            "Sign one of your sessions out",
            revoke,
        ),
        Endpoint::delete::<DeleteAccount, DeletedAccount, _, _>(
            "/account",
            "Delete your account",
            delete_account,
        ),
    ]
}

/// Largest `limit` of `GET /account/sessions` (as for members, spec §8).
pub const MAX_SESSIONS_LIMIT: u64 = MEMBER_LIST_LIMIT_MAX;
/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 50;

/// The signed-in user's User object.
fn current_user(state: &AppState, caller: &Caller) -> ApiResult<Arc<User>> {
    let (user_id, _, _) = caller.require_user()?;
    state
        .caches
        .users
        .find(|u| u.name_any() == user_id)
        .ok_or_else(|| ApiError::unauthenticated("the session's user no longer exists"))
}

fn profile_record(user: &User) -> AccountProfile {
    AccountProfile {
        user_id: user.name_any(),
        email: user.spec.email.clone(),
        display_name: user.spec.display_name.clone(),
        avatar_url: user.spec.avatar_url.clone(),
        email_verified: user.status.as_ref().is_some_and(|s| s.email_verified),
        created_at: created_at(&user.metadata),
        updated_at: updated_at(&user.metadata),
    }
}

async fn profile(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<AccountProfile>> {
    let user = current_user(&state, &caller)?;
    Ok(Json(profile_record(&user)))
}

async fn update_profile(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<UpdateProfile>,
) -> ApiResult<Json<AccountProfile>> {
    let user = current_user(&state, &caller)?;
    if body.email.is_some() {
        return Err(ApiError::validation(
            "email",
            "email cannot be changed: it is the name you sign in with",
        ));
    }
    let mut desired = User::new(&user.name_any(), user.spec.clone());
    if let Some(name) = &body.display_name {
        desired.spec.display_name = display_name("displayName", name)?;
    }
    if let Some(url) = &body.avatar_url {
        desired.spec.avatar_url = image_url("avatarUrl", url)?;
    }
    // Labels such as the first-admin marker belong to the object, not to this change.
    *desired.labels_mut() = user.labels().clone();
    let written = apply(
        &Api::all(state.client.clone()),
        &state.caches.users,
        Some(&caller),
        desired,
    )
    .await?;
    Ok(Json(profile_record(&written)))
}

fn session_record(session: &Session, current_session: &str) -> SessionRecord {
    let status = session.status.clone().unwrap_or_default();
    SessionRecord {
        session_id: session.name_any(),
        user_id: session.spec.user_id.clone(),
        client_kind: session.spec.client_kind.clone(),
        display_name: session.spec.display_name.clone(),
        created_at: created_at(&session.metadata),
        expires_at: timestamp(&session.spec.expires_at),
        ip_address: session.spec.ip_address.clone(),
        user_agent: session.spec.user_agent.clone(),
        current: session.name_any() == current_session,
        last_active_at: status.last_active_at.as_ref().map(timestamp),
    }
}

/// The user's sessions that are still accepted, newest first.
fn live_sessions(state: &AppState, user_id: &str) -> Vec<Arc<Session>> {
    let now = Timestamp::now();
    let mut sessions: Vec<_> = all_in(&state.caches.sessions, &state.config.system_namespace)
        .into_iter()
        .filter(|s| s.spec.user_id == user_id && !s.spec.revoked && s.spec.expires_at.0 > now)
        .collect();
    sessions.sort_by_key(|s| {
        (
            std::cmp::Reverse(s.metadata.creation_timestamp.clone().map(|t| t.0)),
            s.name_any(),
        )
    });
    sessions
}

async fn sessions(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<SessionList>> {
    let (user_id, _, session_id) = caller.require_user()?;
    let limit = query.integer("limit", 1, MAX_SESSIONS_LIMIT, DEFAULT_LIMIT)?;
    let records: Vec<SessionRecord> = live_sessions(&state, user_id)
        .iter()
        .map(|s| session_record(s, session_id))
        .collect();
    let (items, next_cursor) = paginate(&records, query.string("cursor")?, limit as usize)?;
    Ok(Json(SessionList { items, next_cursor }))
}

async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<RevokeSession>,
) -> ApiResult<Json<RevokedSession>> {
    let (user_id, _, _) = caller.require_user()?;
    // Another user's session is as invisible as one that does not exist.
    let owned = state.caches.sessions.find(|s| {
        s.name_any() == id
            && s.namespace().as_deref() == Some(state.config.system_namespace.as_str())
            && s.spec.user_id == user_id
    });
    if owned.is_none() {
        return Err(ApiError::not_found("session", &id));
    }
    let revoked_at = revoke_session(&state, &id).await?;
    Ok(Json(RevokedSession {
        session_id: id,
        revoked_at,
    }))
}

/// Organizations where `user_id` is the only active owner while others are still members:
/// deleting the account would leave them without an owner.
fn sole_ownerships(state: &AppState, user_id: &str) -> Vec<String> {
    memberships(state, user_id)
        .into_iter()
        .filter(|(_, member)| member.spec.role == OrganizationRole::Owner)
        .filter(|(_, member)| {
            let namespace = member.namespace().unwrap_or_default();
            let others: Vec<Arc<Member>> = all_in(&state.caches.members, &namespace)
                .into_iter()
                .filter(|m| m.spec.active && m.spec.user_id != user_id)
                .collect();
            !others.is_empty()
                && !others
                    .iter()
                    .any(|m| m.spec.role == OrganizationRole::Owner)
        })
        .map(|(organization, _)| organization.name_any())
        .collect()
}

async fn delete_account(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<DeleteAccount>,
) -> ApiResult<Json<DeletedAccount>> {
    let user = current_user(&state, &caller)?;
    let user_id = user.name_any();
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(confirmation.user_id.as_deref(), &user_id, "userId", "user")?;
    if user.labels().contains_key(FIRST_ADMIN_LABEL) {
        // Bootstrap runs once; without this account nobody could administer the platform.
        return Err(ApiError::conflict(
            "the first administrator's account cannot be deleted",
        ));
    }
    let blocked = sole_ownerships(&state, &user_id);
    if !blocked.is_empty() {
        return Err(ApiError::conflict(format!(
            "you are the only owner of {}; transfer ownership or remove the other members first",
            blocked.join(", ")
        ))
        .with_detail("organizationIds", blocked));
    }

    for member in state
        .caches
        .members
        .state()
        .into_iter()
        .filter(|m| m.spec.user_id == user_id && m.spec.active)
    {
        deactivate(&state, &caller, &member).await?;
    }
    for session in all_in(&state.caches.sessions, &state.config.system_namespace)
        .into_iter()
        .filter(|s| s.spec.user_id == user_id && !s.spec.revoked)
    {
        revoke_session(&state, &session.name_any()).await?;
    }
    let secrets = Api::<Secret>::namespaced(state.client.clone(), &state.config.system_namespace);
    let secret_name = user
        .spec
        .password_secret_ref
        .clone()
        .unwrap_or_else(|| password_secret_name(&user_id));
    ignore_missing(
        secrets
            .delete(&secret_name, &DeleteParams::background())
            .await,
    )?;
    let users = Api::<User>::all(state.client.clone());
    ignore_missing(users.delete(&user_id, &DeleteParams::background()).await)?;
    wait_deleted(&state.caches.users, user.as_ref(), None).await?;

    tracing::info!(user = %user_id, "account deleted");
    Ok(Json(DeletedAccount {
        user_id,
        deleted_at: timestamp(&now()),
    }))
}

/// A delete of something already gone has done its job.
fn ignore_missing<T>(result: Result<T, kube::Error>) -> ApiResult<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}
