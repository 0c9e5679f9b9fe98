//! Spec §4.3, invitations: list by status, create, revoke, and accept by the invited user.
//! `expired` is computed when `expiresAt` has passed, so no writer has to flip it in time.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_crds::invitation::{Invitation, InvitationSpec, InvitationState};
use berth_crds::member::{MemberSpec, OrganizationRole};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, role_name};
use crate::domain::accounts::validate_email;
use crate::domain::identity::{apply_status, in_organization, now, organization_of_namespace};
use crate::domain::members::{DEFAULT_LIMIT, MAX_LIMIT, member_record, write_member};
use crate::domain::objects::{all_in, find_in};
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, paginate};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::invitations::{
    AcceptInvitation, AcceptedInvitation, CreateInvitation, InvitationList, InvitationRecord,
    Inviter, RevokeInvitation,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<InvitationList, _, _>(
            "/organizations/{organizationId}/invitations",
            "List the organization's invitations",
            list,
        ),
        Endpoint::post::<CreateInvitation, InvitationRecord, _, _>(
            "/organizations/{organizationId}/invitations",
            "Invite someone by email",
            create,
        ),
        Endpoint::post::<RevokeInvitation, InvitationRecord, _, _>(
            "/organizations/{organizationId}/invitations/{invitationId}/revoke",
            "Revoke a pending invitation",
            revoke,
        ),
        Endpoint::post::<AcceptInvitation, AcceptedInvitation, _, _>(
            "/invitations/{invitationId}/accept",
            "Accept an invitation sent to your email",
            accept,
        ),
    ]
}

/// How long an invitation can be accepted.
pub const VALIDITY: SignedDuration = SignedDuration::from_hours(7 * 24);
/// The values of the `status` filter (spec §2.2).
const STATUSES: &[&str] = &["accepted", "expired", "pending", "revoked"];

/// The invitation's state now, in berth-controller's order: revocation (spec), acceptance
/// (`acceptedAt`, which only the shim writes), then expiry, computed from `expiresAt`.
pub fn state_of(invitation: &Invitation) -> InvitationState {
    let status = invitation.status.clone().unwrap_or_default();
    let accepted = status.accepted_at.is_some() || status.status == Some(InvitationState::Accepted);
    if invitation.spec.revoked {
        InvitationState::Revoked
    } else if accepted {
        InvitationState::Accepted
    } else if invitation.spec.expires_at.0 <= Timestamp::now() {
        InvitationState::Expired
    } else {
        InvitationState::Pending
    }
}

fn state_name(state: InvitationState) -> &'static str {
    match state {
        InvitationState::Pending => "pending",
        InvitationState::Accepted => "accepted",
        InvitationState::Expired => "expired",
        InvitationState::Revoked => "revoked",
    }
}

fn record(state: &AppState, invitation: &Invitation, organization_id: &str) -> InvitationRecord {
    let inviter_id = invitation.spec.inviter_user_id.clone();
    let inviter = state.caches.users.find(|u| u.name_any() == inviter_id);
    InvitationRecord {
        invitation_id: invitation.name_any(),
        organization_id: organization_id.to_string(),
        email: invitation.spec.email.clone(),
        role: role_name(invitation.spec.role).to_string(),
        status: state_name(state_of(invitation)).to_string(),
        created_at: created_at(&invitation.metadata),
        expires_at: timestamp(&invitation.spec.expires_at),
        inviter: Inviter {
            user_id: inviter_id,
            display_name: inviter.as_ref().and_then(|u| u.spec.display_name.clone()),
            email: inviter.as_ref().map(|u| u.spec.email.clone()),
        },
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(organization_id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<InvitationList>> {
    let scoped = in_organization(&state, &caller, &organization_id)?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    let status = query.one_of("status", STATUSES, None)?;
    let cursor = query.string("cursor")?;
    let mut invitations = all_in(&state.caches.invitations, &scoped.organization()?.namespace);
    // Newest first: the ones people act on.
    invitations.sort_by_key(|i| {
        (
            std::cmp::Reverse(i.metadata.creation_timestamp.clone().map(|t| t.0)),
            i.name_any(),
        )
    });
    let records: Vec<InvitationRecord> = invitations
        .iter()
        .map(|i| record(&state, i, &organization_id))
        .filter(|r| status.is_none_or(|wanted| r.status == wanted))
        .collect();
    let (items, next_cursor) = paginate(&records, cursor, limit as usize)?;
    Ok(Json(InvitationList { items, next_cursor }))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(organization_id): Path<String>,
    JsonBody(body): JsonBody<CreateInvitation>,
) -> ApiResult<Json<InvitationRecord>> {
    let scoped = in_organization(&state, &caller, &organization_id)?;
    let acting = scoped.require_role(OrganizationRole::Admin)?.clone();
    if body.role == OrganizationRole::Owner && acting.role != OrganizationRole::Owner {
        return Err(ApiError::forbidden("only an owner can invite an owner")
            .with_detail("requiredRole", "owner"));
    }
    validate_email("email", body.email.trim())?;
    let email = body.email.trim().to_lowercase();
    let already_member = all_in(&state.caches.members, &acting.namespace)
        .iter()
        .any(|m| m.spec.active && member_record(&state, m).email.eq_ignore_ascii_case(&email));
    if already_member {
        return Err(ApiError::conflict(format!(
            "{email} is already a member of this organization"
        ))
        .with_detail("field", "email"));
    }
    let pending = all_in(&state.caches.invitations, &acting.namespace)
        .into_iter()
        .find(|i| i.spec.email == email && state_of(i) == InvitationState::Pending);
    if let Some(pending) = pending {
        return Err(ApiError::conflict(format!(
            "{email} already has a pending invitation; revoke it to send a new one"
        ))
        .with_detail("field", "email")
        .with_detail("invitationId", pending.name_any()));
    }
    let (user_id, _, _) = caller.require_user()?;
    let expires_at = Timestamp::now()
        .checked_add(VALIDITY)
        .map_err(ApiError::internal)?;
    let id = new_id("inv");
    let invitation = Invitation::new(
        &id,
        InvitationSpec {
            email,
            role: body.role,
            inviter_user_id: user_id.to_string(),
            expires_at: Time(expires_at),
            revoked: false,
        },
    );
    let api = Api::<Invitation>::namespaced(state.client.clone(), &acting.namespace);
    // Its status (`pending`, conditions) is berth-controller's bookkeeping.
    let written = apply(&api, &state.caches.invitations, Some(&scoped), invitation).await?;
    Ok(Json(record(&state, &written, &organization_id)))
}

async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path((organization_id, id)): Path<(String, String)>,
    JsonBody(_): JsonBody<RevokeInvitation>,
) -> ApiResult<Json<InvitationRecord>> {
    let scoped = in_organization(&state, &caller, &organization_id)?;
    let namespace = scoped.organization()?.namespace.clone();
    let invitation = find_in(&state.caches.invitations, &namespace, &id, "invitation")?;
    scoped.require_role(OrganizationRole::Admin)?;
    match state_of(&invitation) {
        InvitationState::Accepted => {
            return Err(ApiError::conflict(
                "the invitation was already accepted; remove the member instead",
            ));
        }
        InvitationState::Revoked => return Ok(Json(record(&state, &invitation, &organization_id))),
        InvitationState::Pending | InvitationState::Expired => {}
    }
    let mut desired = Invitation::new(&id, invitation.spec.clone());
    desired.spec.revoked = true;
    let api = Api::<Invitation>::namespaced(state.client.clone(), &namespace);
    let written = apply(&api, &state.caches.invitations, Some(&scoped), desired).await?;
    Ok(Json(record(&state, &written, &organization_id)))
}

/// The invitation `id` addressed to `email`, in a live organization; anything else is a 404 so
/// invitations to other people stay invisible.
fn addressed_to(state: &AppState, id: &str, email: &str) -> ApiResult<(Arc<Invitation>, String)> {
    state
        .caches
        .invitations
        .find(|i| i.name_any() == id && i.spec.email.eq_ignore_ascii_case(email))
        .and_then(|invitation| {
            let organization = organization_of_namespace(state, &invitation.namespace()?)?;
            Some((invitation, organization.name_any()))
        })
        .ok_or_else(|| ApiError::not_found("invitation", id))
}

async fn accept(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<AcceptInvitation>,
) -> ApiResult<Json<AcceptedInvitation>> {
    let (user_id, email, _) = caller.require_user()?;
    let (invitation, organization_id) = addressed_to(&state, &id, email)?;
    let refused = |why: &str| {
        ApiError::conflict(format!("the invitation {why}"))
            .with_detail("status", state_name(state_of(&invitation)))
    };
    match state_of(&invitation) {
        InvitationState::Pending => {}
        InvitationState::Accepted => return Err(refused("was already accepted")),
        InvitationState::Expired => {
            return Err(refused("expired; ask for a new one"));
        }
        InvitationState::Revoked => return Err(refused("was revoked")),
    }
    let namespace = invitation.namespace().unwrap_or_default();
    let existing = all_in(&state.caches.members, &namespace)
        .into_iter()
        .find(|m| m.spec.user_id == user_id);
    if existing.as_ref().is_some_and(|m| m.spec.active) {
        return Err(ApiError::conflict(
            "you are already a member of this organization",
        ));
    }
    let spec = MemberSpec {
        user_id: user_id.to_string(),
        email: email.to_string(),
        role: invitation.spec.role,
        active: true,
    };
    // A removed membership comes back (same id, history kept) instead of a second one.
    let member_id = existing.map_or_else(|| new_id("mem"), |m| m.name_any());
    let member = write_member(&state, &caller, &namespace, &member_id, spec).await?;
    let api = Api::<Invitation>::namespaced(state.client.clone(), &namespace);
    let written = apply_status(
        &api,
        &state.caches.invitations,
        &id,
        serde_json::json!({
            "status": "accepted",
            "acceptedAt": now(),
            "acceptedByUserId": user_id,
        }),
    )
    .await?;
    tracing::info!(invitation = %id, user = %user_id, "invitation accepted");
    Ok(Json(AcceptedInvitation {
        invitation: record(&state, &written, &organization_id),
        member: member_record(&state, &member),
    }))
}
