//! Who is calling: a user with a session token, or a deploy token; in which organization and
//! with which role. Every route that is not public takes a [`Caller`].

pub mod internal;
pub mod last_used;
pub mod password;
pub mod runner;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use berth_crds::deploy_token::{DeployToken, DeployTokenScope};
use berth_crds::member::{Member, OrganizationRole};
use berth_crds::organization::Organization;
use berth_crds::session::Session;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::error::ApiError;
use crate::state::AppState;
use crate::token;

/// The authenticated identity behind a request.
#[derive(Clone, Debug)]
pub enum Principal {
    /// A person signed in with a session token.
    User {
        user_id: String,
        email: String,
        session_id: String,
    },
    /// Automation holding a deploy token, limited to its scope.
    DeployToken {
        token_id: String,
        scope: DeployTokenScope,
    },
    /// A Migration written with kubectl, running its steps (`internal`).
    Migration { migration: String },
}

/// A caller, resolved to its current organization and role there.
#[derive(Clone, Debug)]
pub struct Caller {
    pub principal: Principal,
    /// Current organization (object name); `None` for a user who belongs to none.
    pub organization: Option<CallerOrganization>,
}

#[derive(Clone, Debug)]
pub struct CallerOrganization {
    pub id: String,
    pub namespace: String,
    pub role: OrganizationRole,
    /// The caller's Member object (users only).
    pub member_id: Option<String>,
}

/// Actor kinds recorded on the objects a caller writes (`updatedByActorKind`).
pub const ACTOR_USER: &str = "user";
pub const ACTOR_DEPLOY_TOKEN: &str = "deploy-token";
pub const ACTOR_MIGRATION: &str = "migration";

impl Caller {
    /// The caller's current organization, or 403 if it has none.
    pub fn organization(&self) -> Result<&CallerOrganization, ApiError> {
        self.organization
            .as_ref()
            .ok_or_else(|| ApiError::forbidden("you are not a member of any organization"))
    }

    /// Requires at least `minimum` in the current organization.
    pub fn require_role(&self, minimum: OrganizationRole) -> Result<&CallerOrganization, ApiError> {
        let organization = self.organization()?;
        if rank(organization.role) < rank(minimum) {
            return Err(ApiError::forbidden(format!(
                "this needs the {} role or higher; you are {}",
                role_name(minimum),
                role_name(organization.role)
            ))
            .with_detail("requiredRole", role_name(minimum)));
        }
        Ok(organization)
    }

    /// The user behind the call; deploy tokens are refused (account and membership calls).
    pub fn require_user(&self) -> Result<(&str, &str, &str), ApiError> {
        match &self.principal {
            Principal::User {
                user_id,
                email,
                session_id,
            } => Ok((user_id, email, session_id)),
            Principal::DeployToken { .. } | Principal::Migration { .. } => Err(
                ApiError::forbidden("deploy tokens cannot call this endpoint; sign in as a user"),
            ),
        }
    }

    /// `(kind, id)` of the actor, for `updatedByActorKind` / `updatedByActorId`.
    pub fn actor(&self) -> (&'static str, &str) {
        match &self.principal {
            Principal::User { user_id, .. } => (ACTOR_USER, user_id),
            Principal::DeployToken { token_id, .. } => (ACTOR_DEPLOY_TOKEN, token_id),
            Principal::Migration { migration } => (ACTOR_MIGRATION, migration),
        }
    }

    /// A deploy token may touch only ids inside its scope array (empty array: no limit).
    pub fn require_in_scope(&self, dimension: ScopeDimension, id: &str) -> Result<(), ApiError> {
        let Principal::DeployToken { scope, .. } = &self.principal else {
            return Ok(());
        };
        let allowed = match dimension {
            ScopeDimension::Project => &scope.project_ids,
            ScopeDimension::Environment => &scope.environment_ids,
            ScopeDimension::Resource => &scope.resource_ids,
            ScopeDimension::Target => &scope.deployment_target_ids,
            ScopeDimension::Repository => &scope.repository_full_names,
            ScopeDimension::WorkflowCommand => &scope.workflow_commands,
        };
        if allowed.is_empty() || allowed.iter().any(|a| a == id) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "this deploy token's scope does not include {id}"
            )))
        }
    }

    /// Whether the caller sees only part of its organization (a deploy token with a scope).
    pub fn is_limited(&self) -> bool {
        let Principal::DeployToken { scope, .. } = &self.principal else {
            return false;
        };
        [
            &scope.project_ids,
            &scope.environment_ids,
            &scope.resource_ids,
            &scope.deployment_target_ids,
        ]
        .iter()
        .any(|ids| !ids.is_empty())
    }

    /// Whether a deploy token's scope lets it see `id` (lists filter with this).
    pub fn sees(&self, dimension: ScopeDimension, id: &str) -> bool {
        self.require_in_scope(dimension, id).is_ok()
    }
}

/// The scope arrays of a deploy token.
#[derive(Clone, Copy, Debug)]
pub enum ScopeDimension {
    Project,
    Environment,
    Resource,
    Target,
    Repository,
    WorkflowCommand,
}

fn rank(role: OrganizationRole) -> u8 {
    match role {
        OrganizationRole::Member => 1,
        OrganizationRole::Admin => 2,
        OrganizationRole::Owner => 3,
    }
}

/// The role as the REST API spells it.
pub fn role_name(role: OrganizationRole) -> &'static str {
    match role {
        OrganizationRole::Owner => "owner",
        OrganizationRole::Admin => "admin",
        OrganizationRole::Member => "member",
    }
}

/// The six organization permission booleans of spec §2.1, derived from a role.
pub fn permissions(role: OrganizationRole) -> serde_json::Value {
    let admin = rank(role) >= rank(OrganizationRole::Admin);
    serde_json::json!({
        "canInviteMembers": admin,
        "canListMembers": true,
        "canManageDeployTokens": admin,
        "canRemoveMembers": admin,
        "canTransferOwnership": role == OrganizationRole::Owner,
        "canUpdateMemberRoles": admin,
    })
}

/// The bearer token of a request, if any.
pub fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let secret = bearer(parts)
            .ok_or_else(|| ApiError::unauthenticated("send Authorization: Bearer <token>"))?;
        let digest = token::digest(secret);
        if secret.starts_with(token::DEPLOY_TOKEN_PREFIX) {
            return deploy_token_caller(state, &digest);
        }
        if secret.starts_with(internal::INTERNAL_PREFIX) {
            return internal::caller(secret)
                .ok_or_else(|| ApiError::unauthenticated("the token is not valid"));
        }
        let session = find_session(state, &digest)?;
        session_caller(state, &session)
    }
}

/// The caller a login session stands for, if it is still live: how a terminal ticket (handed
/// out to that session) authenticates its WebSocket without the token in a URL.
pub fn caller_of_session(state: &AppState, session_id: &str) -> Result<Caller, ApiError> {
    let session = state
        .caches
        .sessions
        .find(|s| s.name_any() == session_id)
        .ok_or_else(|| ApiError::unauthenticated("the session no longer exists"))?;
    live(&session)?;
    session_caller(state, &session)
}

fn session_caller(state: &AppState, session: &Session) -> Result<Caller, ApiError> {
    let user_id = session.spec.user_id.clone();
    let user = state
        .caches
        .users
        .state()
        .into_iter()
        .find(|u| u.name_any() == user_id)
        .ok_or_else(|| ApiError::unauthenticated("the session's user no longer exists"))?;
    let organization = user_organization(state, &user_id, session.spec.organization_id.as_deref());
    Ok(Caller {
        principal: Principal::User {
            user_id,
            email: user.spec.email.clone(),
            session_id: session.name_any(),
        },
        organization,
    })
}

/// A live (not revoked, not expired) session whose token digest matches.
fn find_session(state: &AppState, digest: &str) -> Result<std::sync::Arc<Session>, ApiError> {
    let session = state
        .caches
        .sessions
        .find(|s| s.spec.token_digest == digest)
        .ok_or_else(|| ApiError::unauthenticated("the token is not valid"))?;
    live(&session)?;
    Ok(session)
}

/// Refuses a revoked or expired session.
fn live(session: &Session) -> Result<(), ApiError> {
    if session.spec.revoked {
        return Err(ApiError::unauthenticated(
            "the session was revoked; sign in again",
        ));
    }
    if session.spec.expires_at.0 <= Timestamp::now() {
        return Err(ApiError::unauthenticated(
            "the session expired; sign in again",
        ));
    }
    Ok(())
}

fn deploy_token_caller(state: &AppState, digest: &str) -> Result<Caller, ApiError> {
    let token = state
        .caches
        .deploy_tokens
        .find(|t| t.spec.secret_digest == digest)
        .ok_or_else(|| ApiError::unauthenticated("the token is not valid"))?;
    if let Err(refused) = check_token_usable(&token) {
        record_refused_token(state, &token, &refused.body.message);
        return Err(refused);
    }
    last_used::note(state, &token);
    let namespace = token.namespace().unwrap_or_default();
    let organization = state
        .caches
        .organizations
        .find(|o| {
            o.status.as_ref().and_then(|s| s.namespace.as_deref()) == Some(namespace.as_str())
        })
        .ok_or_else(|| ApiError::unauthenticated("the token's organization no longer exists"))?;
    Ok(Caller {
        principal: Principal::DeployToken {
            token_id: token.name_any(),
            scope: token.spec.scope.clone(),
        },
        organization: Some(CallerOrganization {
            id: organization.name_any(),
            namespace,
            role: OrganizationRole::Member,
            member_id: None,
        }),
    })
}

/// A revoked or expired token's use is an audit event of its organization, at most one a
/// minute per token (a CI job retrying every second is one line, not thousands).
fn record_refused_token(state: &AppState, token: &DeployToken, why: &str) {
    let name = token.name_any();
    let minute = Timestamp::now().as_second() / 60;
    let namespace = token.namespace().unwrap_or_default();
    crate::audit::record_refusal(
        &state.observations,
        crate::audit::Refusal {
            id: format!("ref-{name}-{minute}"),
            verb: crate::audit::Verb::Refused,
            namespace: &namespace,
            kind: "DeployToken",
            name: &name,
            actor: (ACTOR_DEPLOY_TOKEN, &name),
            action: "authenticate",
            summary: format!(
                "deploy token {name} ({}) refused: {why}",
                token.spec.display_name
            ),
        },
    );
}

/// Revoked or expired tokens are refused at once.
pub fn check_token_usable(token: &DeployToken) -> Result<(), ApiError> {
    if token.spec.revoked {
        return Err(ApiError::unauthenticated("the deploy token was revoked"));
    }
    if token
        .spec
        .expires_at
        .as_ref()
        .is_some_and(|at| at.0 <= Timestamp::now())
    {
        return Err(ApiError::unauthenticated("the deploy token expired"));
    }
    Ok(())
}

/// The organization a user acts in: the session's choice if still a member, else the first
/// organization (by name) where the user is an active member.
pub fn user_organization(
    state: &AppState,
    user_id: &str,
    preferred: Option<&str>,
) -> Option<CallerOrganization> {
    let mut memberships: Vec<(std::sync::Arc<Organization>, std::sync::Arc<Member>)> = state
        .caches
        .members
        .state()
        .into_iter()
        .filter(|m| m.spec.user_id == user_id && m.spec.active)
        .filter_map(|member| {
            let namespace = member.namespace()?;
            // An organization being deleted is gone for its members already.
            let organization = state.caches.organizations.find(|o| {
                o.metadata.deletion_timestamp.is_none()
                    && o.status.as_ref().and_then(|s| s.namespace.as_deref())
                        == Some(namespace.as_str())
            })?;
            Some((organization, member))
        })
        .collect();
    memberships.sort_by_key(|(organization, _)| organization.name_any());
    let chosen = preferred
        .and_then(|id| memberships.iter().position(|(o, _)| o.name_any() == id))
        .unwrap_or(0);
    let (organization, member) = memberships.get(chosen)?;
    Some(CallerOrganization {
        id: organization.name_any(),
        namespace: member.namespace().unwrap_or_default(),
        role: member.spec.role,
        member_id: Some(member.name_any()),
    })
}
