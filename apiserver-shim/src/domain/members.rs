//! Memberships: the record of a member, and the writes that add, change or remove one.

use berth_api::members::MemberRecord;
use berth_crds::limits::MEMBER_LIST_LIMIT_MAX;
use berth_crds::member::{Member, MemberSpec};
use kube::{Api, ResourceExt};

use crate::auth::{Caller, role_name};
use crate::domain::identity::{apply_status, now};
use crate::domain::time::{created_at, timestamp};
use crate::error::ApiResult;
use crate::state::AppState;
use crate::write::apply;

/// Largest `limit` of member and invitation lists (spec §8).
pub const MAX_LIMIT: u64 = MEMBER_LIST_LIMIT_MAX;

/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 50;

/// `status` of an active member.
pub const ACTIVE: &str = "active";

/// `status` of a removed member (the spec's member statuses, closed with Appaloft's:
/// `active`, `deactivated`); reactivating makes it `active` again.
pub const REMOVED: &str = "deactivated";

/// Converts a Member to its record; names and avatars come from the User.
pub fn member_record(state: &AppState, member: &Member) -> MemberRecord {
    let user = state
        .caches
        .users
        .find(|u| u.name_any() == member.spec.user_id);
    let status = member.status.clone().unwrap_or_default();
    MemberRecord {
        member_id: member.name_any(),
        user_id: member.spec.user_id.clone(),
        role: role_name(member.spec.role).to_string(),
        joined_at: status
            .joined_at
            .as_ref()
            .map(timestamp)
            .unwrap_or_else(|| created_at(&member.metadata)),
        avatar_url: user.as_ref().and_then(|u| u.spec.avatar_url.clone()),
        display_name: user.as_ref().and_then(|u| u.spec.display_name.clone()),
        email: user
            .as_ref()
            .map(|u| u.spec.email.clone())
            .unwrap_or_else(|| member.spec.email.clone()),
        status: if member.spec.active { ACTIVE } else { REMOVED }.to_string(),
    }
}

pub fn members_api(state: &AppState, namespace: &str) -> Api<Member> {
    Api::namespaced(state.client.clone(), namespace)
}

/// Writes a Member's spec (creating it if new). Its status (`memberStatus`, `joinedAt`) is
/// berth-controller's bookkeeping; records derive `status` from the spec, so they are right at
/// once.
pub async fn write_member(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    id: &str,
    spec: MemberSpec,
) -> ApiResult<Member> {
    let member = Member::new(id, spec);
    apply(
        &members_api(state, namespace),
        &state.caches.members,
        Some(caller),
        member,
    )
    .await
}

/// Removes a membership (`spec.active: false`); returns `removedAt`.
pub async fn deactivate(state: &AppState, caller: &Caller, member: &Member) -> ApiResult<String> {
    let namespace = member.namespace().unwrap_or_default();
    let removed_at = now();
    // The time goes in before the spec changes: the controller stamps `removedAt` only when it
    // is missing, so it keeps this one and a repeated removal reports the same time.
    apply_status(
        &members_api(state, &namespace),
        &state.caches.members,
        &member.name_any(),
        serde_json::json!({ "removedAt": removed_at }),
    )
    .await?;
    let mut spec = member.spec.clone();
    spec.active = false;
    write_member(state, caller, &namespace, &member.name_any(), spec).await?;
    Ok(timestamp(&removed_at))
}
