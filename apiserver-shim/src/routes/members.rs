//! Spec §4.3, an organization's members: list, role change, removal, reactivation and owner
//! transfer. Removal unsets `spec.active`; the Member object stays so it can be reactivated.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_crds::member::{Member, OrganizationRole};
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::{Caller, CallerOrganization};
use crate::domain::identity::{active_owners, in_organization, now, updated_at};
use crate::domain::members::{DEFAULT_LIMIT, MAX_LIMIT, deactivate, member_record, write_member};
use crate::domain::objects::{all_in, find_in};
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, paginate};
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::members::{
    ChangeRole, MemberList, MemberRecord, ReactivateMember, RemoveMember, RemovedMember,
    TransferOwnership, TransferredOwnership,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<MemberList, _, _>(
            "/organizations/{organizationId}/members",
            "List the organization's members",
            list,
        ),
        Endpoint::post::<ChangeRole, MemberRecord, _, _>(
            "/organizations/{organizationId}/members/{memberId}/role",
            "Change a member's role",
            change_role,
        ),
        Endpoint::delete::<RemoveMember, RemovedMember, _, _>(
            "/organizations/{organizationId}/members/{memberId}",
            "Remove a member (reversible)",
            remove,
        ),
        Endpoint::post::<ReactivateMember, MemberRecord, _, _>(
            "/organizations/{organizationId}/members/{memberId}/reactivate",
            "Reactivate a removed member",
            reactivate,
        ),
        Endpoint::post::<TransferOwnership, TransferredOwnership, _, _>(
            "/organizations/{organizationId}/owner-transfer",
            "Hand your ownership to another member",
            transfer,
        ),
    ]
}

/// Only an owner may hand out or take away the owner role.
fn require_owner_for(acting: &CallerOrganization, roles: &[OrganizationRole]) -> ApiResult<()> {
    if roles.contains(&OrganizationRole::Owner) && acting.role != OrganizationRole::Owner {
        return Err(ApiError::forbidden(
            "only an owner can grant, change or remove the owner role",
        )
        .with_detail("requiredRole", "owner"));
    }
    Ok(())
}

/// Refuses to take the owner role away from the organization's last active owner.
fn keep_an_owner(state: &AppState, member: &Member) -> ApiResult<()> {
    let namespace = member.namespace().unwrap_or_default();
    let is_owner = member.spec.active && member.spec.role == OrganizationRole::Owner;
    if is_owner && active_owners(state, &namespace).len() <= 1 {
        return Err(ApiError::conflict(
            "this is the organization's last owner; make another member owner first",
        )
        .with_detail("memberId", member.name_any()));
    }
    Ok(())
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(organization_id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<MemberList>> {
    let scoped = in_organization(&state, &caller, &organization_id)?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    let cursor = query.string("cursor")?;
    let mut records: Vec<MemberRecord> =
        all_in(&state.caches.members, &scoped.organization()?.namespace)
            .iter()
            .map(|m| member_record(&state, m))
            .collect();
    records.sort_by(|a, b| (&a.joined_at, &a.member_id).cmp(&(&b.joined_at, &b.member_id)));
    let (items, next_cursor) = paginate(&records, cursor, limit as usize)?;
    Ok(Json(MemberList { items, next_cursor }))
}

/// The caller acting in the organization with at least admin, and the member `id` there.
fn target(
    state: &AppState,
    caller: &Caller,
    organization_id: &str,
    id: &str,
) -> ApiResult<(Caller, Arc<Member>)> {
    let scoped = in_organization(state, caller, organization_id)?;
    let namespace = scoped.organization()?.namespace.clone();
    let member = find_in(&state.caches.members, &namespace, id, "member")?;
    scoped.require_role(OrganizationRole::Admin)?;
    Ok((scoped, member))
}

async fn change_role(
    State(state): State<AppState>,
    caller: Caller,
    Path((organization_id, id)): Path<(String, String)>,
    JsonBody(body): JsonBody<ChangeRole>,
) -> ApiResult<Json<MemberRecord>> {
    let (scoped, member) = target(&state, &caller, &organization_id, &id)?;
    require_owner_for(scoped.organization()?, &[member.spec.role, body.role])?;
    if member.spec.role == body.role {
        return Ok(Json(member_record(&state, &member)));
    }
    keep_an_owner(&state, &member)?;
    let mut spec = member.spec.clone();
    spec.role = body.role;
    let namespace = scoped.organization()?.namespace.clone();
    let written = write_member(&state, &scoped, &namespace, &id, spec).await?;
    Ok(Json(member_record(&state, &written)))
}

async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path((organization_id, id)): Path<(String, String)>,
    JsonBody(_): JsonBody<RemoveMember>,
) -> ApiResult<Json<RemovedMember>> {
    let (scoped, member) = target(&state, &caller, &organization_id, &id)?;
    require_owner_for(scoped.organization()?, &[member.spec.role])?;
    let removed_at = if member.spec.active {
        keep_an_owner(&state, &member)?;
        deactivate(&state, &scoped, &member).await?
    } else {
        // Removing again reports the original removal (or, for a member deactivated outside
        // the API, when its spec last changed).
        let status = member.status.clone().unwrap_or_default();
        status
            .removed_at
            .as_ref()
            .map(timestamp)
            .unwrap_or_else(|| updated_at(&member.metadata))
    };
    Ok(Json(RemovedMember {
        member_id: id,
        organization_id,
        removed_at,
    }))
}

async fn reactivate(
    State(state): State<AppState>,
    caller: Caller,
    Path((organization_id, id)): Path<(String, String)>,
    JsonBody(_): JsonBody<ReactivateMember>,
) -> ApiResult<Json<MemberRecord>> {
    let (scoped, member) = target(&state, &caller, &organization_id, &id)?;
    require_owner_for(scoped.organization()?, &[member.spec.role])?;
    if member.spec.active {
        return Ok(Json(member_record(&state, &member)));
    }
    if state
        .caches
        .users
        .find(|u| u.name_any() == member.spec.user_id)
        .is_none()
    {
        return Err(ApiError::conflict(
            "this member's account was deleted; invite the person again",
        ));
    }
    let mut spec = member.spec.clone();
    spec.active = true;
    let namespace = scoped.organization()?.namespace.clone();
    let written = write_member(&state, &scoped, &namespace, &id, spec).await?;
    Ok(Json(member_record(&state, &written)))
}

async fn transfer(
    State(state): State<AppState>,
    caller: Caller,
    Path(organization_id): Path<String>,
    JsonBody(body): JsonBody<TransferOwnership>,
) -> ApiResult<Json<TransferredOwnership>> {
    let scoped = in_organization(&state, &caller, &organization_id)?;
    let acting = scoped.organization()?.clone();
    let from = find_in(
        &state.caches.members,
        &acting.namespace,
        &body.from_member_id,
        "member",
    )?;
    let to = find_in(
        &state.caches.members,
        &acting.namespace,
        &body.to_member_id,
        "member",
    )?;
    scoped.require_role(OrganizationRole::Owner)?;
    // A transfer hands over the caller's own ownership; other owners change through `role`.
    if acting.member_id.as_deref() != Some(body.from_member_id.as_str()) {
        return Err(
            ApiError::forbidden("fromMemberId must be your own membership")
                .with_detail("field", "fromMemberId"),
        );
    }
    if from.name_any() == to.name_any() {
        return Err(ApiError::validation(
            "toMemberId",
            "toMemberId must be another member than fromMemberId",
        ));
    }
    if !to.spec.active {
        return Err(
            ApiError::conflict("toMemberId is a removed member; reactivate it first")
                .with_detail("field", "toMemberId"),
        );
    }
    // Promote first, so the organization always has an owner.
    let mut to_spec = to.spec.clone();
    to_spec.role = OrganizationRole::Owner;
    let to = write_member(&state, &scoped, &acting.namespace, &to.name_any(), to_spec).await?;
    let mut from_spec = from.spec.clone();
    from_spec.role = OrganizationRole::Admin;
    let from = write_member(
        &state,
        &scoped,
        &acting.namespace,
        &from.name_any(),
        from_spec,
    )
    .await?;
    Ok(Json(TransferredOwnership {
        from_member: member_record(&state, &from),
        to_member: member_record(&state, &to),
        transferred_at: timestamp(&now()),
    }))
}
