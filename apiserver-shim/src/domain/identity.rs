//! Helpers the identity route groups share (account, organizations, members, invitations,
//! users): which organizations a user belongs to, the `permissions` booleans, status writes
//! and the small validations of profile fields.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::member::{Member, OrganizationRole};
use berth_crds::organization::Organization;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::auth::{self, Caller, CallerOrganization, user_organization};
use crate::cache::catch_up;
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, FIELD_MANAGER};

pub use berth_api::identity::Permissions;

/// Permissions of `role` (all false without one), typed from `auth::permissions`, the one place
/// that decides them.
pub fn permissions(role: Option<OrganizationRole>) -> Permissions {
    role.and_then(|role| serde_json::from_value(auth::permissions(role)).ok())
        .unwrap_or_default()
}

/// An organization that exists and is not being deleted.
pub fn live_organization(state: &AppState, id: &str) -> Option<Arc<Organization>> {
    state
        .caches
        .organizations
        .find(|o| o.name_any() == id && o.metadata.deletion_timestamp.is_none())
}

/// The live organization owning `namespace`.
pub fn organization_of_namespace(state: &AppState, namespace: &str) -> Option<Arc<Organization>> {
    state.caches.organizations.find(|o| {
        o.metadata.deletion_timestamp.is_none()
            && o.status.as_ref().and_then(|s| s.namespace.as_deref()) == Some(namespace)
    })
}

/// A user's active memberships in live organizations, ordered by organization id.
pub fn memberships(state: &AppState, user_id: &str) -> Vec<(Arc<Organization>, Arc<Member>)> {
    let mut found: Vec<_> = state
        .caches
        .members
        .state()
        .into_iter()
        .filter(|m| m.spec.user_id == user_id && m.spec.active)
        .filter_map(|member| {
            let organization = organization_of_namespace(state, &member.namespace()?)?;
            Some((organization, member))
        })
        .collect();
    found.sort_by_key(|(organization, _)| organization.name_any());
    found
}

/// The caller acting in `organization_id` (users only). An organization the caller is not an
/// active member of is a 404, exactly like one that does not exist.
pub fn in_organization(
    state: &AppState,
    caller: &Caller,
    organization_id: &str,
) -> ApiResult<Caller> {
    let (user_id, _, _) = caller.require_user()?;
    let membership: Option<CallerOrganization> =
        user_organization(state, user_id, Some(organization_id))
            .filter(|membership| membership.id == organization_id)
            .filter(|_| live_organization(state, organization_id).is_some());
    let membership =
        membership.ok_or_else(|| ApiError::not_found("organization", organization_id))?;
    Ok(Caller {
        principal: caller.principal.clone(),
        organization: Some(membership),
    })
}

/// Active owners of the organization in `namespace`.
pub fn active_owners(state: &AppState, namespace: &str) -> Vec<Arc<Member>> {
    crate::domain::objects::all_in(&state.caches.members, namespace)
        .into_iter()
        .filter(|m| m.spec.active && m.spec.role == OrganizationRole::Owner)
        .collect()
}

/// Writes the given status fields with server-side apply on `/status` and waits for the cache.
/// Only the fields named are claimed, so conditions a controller owns are left alone.
pub async fn apply_status<K>(
    api: &Api<K>,
    store: &Store<K>,
    name: &str,
    status: serde_json::Value,
) -> ApiResult<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let patch = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": status,
    });
    let written = api
        .patch_status(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await?;
    catch_up(store, &written).await?;
    Ok(written)
}

/// The current time in whole seconds, the precision custom resources store: a time returned
/// now reads back identically later.
pub fn now() -> Time {
    let now = Timestamp::now();
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// When the object's spec last changed: the newest managed-fields entry that touches the spec
/// (any writer, kubectl included), else its creation.
pub fn updated_at(meta: &ObjectMeta) -> String {
    meta.managed_fields
        .iter()
        .flatten()
        .filter(|entry| {
            entry
                .fields_v1
                .as_ref()
                .is_some_and(|fields| fields.0.get("f:spec").is_some())
        })
        .filter_map(|entry| entry.time.as_ref())
        .max_by_key(|time| time.0)
        .map(timestamp)
        .unwrap_or_else(|| created_at(meta))
}

/// A display name: trimmed, at most `berth_api::identity::MAX_NAME_LENGTH` characters; `None`
/// when blank.
pub fn display_name(field: &str, value: &str) -> ApiResult<Option<String>> {
    Ok(berth_api::identity::display_name(field, value)?)
}

/// An image URL (http or https); `None` when blank, which clears it.
pub fn image_url(field: &str, value: &str) -> ApiResult<Option<String>> {
    Ok(berth_api::identity::image_url(field, value)?)
}

/// The controller provisions an organization's namespace; wait for it (bounded).
pub async fn wait_for_namespace(state: &AppState, organization: &str) -> ApiResult<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let namespace = state
            .caches
            .organizations
            .find(|o| o.name_any() == organization)
            .and_then(|o| o.status.as_ref()?.namespace.clone());
        if let Some(namespace) = namespace {
            return Ok(namespace);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::unavailable(
                "the organization's namespace was not provisioned within 30 s; is berth-controller running?",
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_follow_the_role() {
        let owner = permissions(Some(OrganizationRole::Owner));
        assert!(owner.can_transfer_ownership && owner.can_invite_members);
        let admin = permissions(Some(OrganizationRole::Admin));
        assert!(admin.can_remove_members && !admin.can_transfer_ownership);
        let member = permissions(Some(OrganizationRole::Member));
        assert!(member.can_list_members && !member.can_invite_members);
        assert_eq!(permissions(None), Permissions::default());
    }

    #[test]
    fn now_has_whole_seconds() {
        assert_eq!(now().0.subsec_nanosecond(), 0);
    }

    #[test]
    fn updated_at_falls_back_to_creation() {
        let meta = ObjectMeta {
            creation_timestamp: Some(Time("2024-01-02T03:04:05Z".parse().unwrap())),
            ..Default::default()
        };
        assert_eq!(updated_at(&meta), "2024-01-02T03:04:05Z");
    }
}
