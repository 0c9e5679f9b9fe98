//! Decision and usage records (`usage_intents`, `overlays`): the checks every record's context
//! passes (organization, actor, resource references), and the create, order and filters their
//! lists share.

use std::sync::Arc;

use berth_api::decisions::{ActorInput, ContextInput, MAX_KEY};
use berth_crds::common::{Actor, DecisionContext, ResourceRefs};
use berth_crds::member::OrganizationRole;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use kube::api::PostParams;
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;

use crate::auth::{Caller, Principal, ScopeDimension};
use crate::cache::catch_up;
use crate::domain::fields::bounded;
use crate::error::{ApiError, ApiResult};

/// Largest `limit` of the record lists (spec §8).
pub const MAX_LIMIT: u64 = berth_crds::limits::LIST_LIMIT_MAX;

/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 100;

/// Checks a record's context against the caller and fills it in: the organization is the
/// caller's (any other is a 404), the actor is the caller, and a deploy token names only ids
/// in its scope. The limits of its fields are checked before, by the body's `validate`
/// (`berth_api::decisions::ContextFields`). The stored context always holds the organization
/// and the actor.
pub fn context(caller: &Caller, input: ContextInput) -> ApiResult<DecisionContext> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    if let Some(id) = &input.organization_id {
        own_organization(caller, id)?;
    }
    if let Some(refs) = &input.resource_refs {
        check_refs(caller, refs)?;
    }
    Ok(DecisionContext {
        tenant_id: input.tenant_id,
        account_id: input.account_id,
        organization_id: Some(organization.id.clone()),
        actor: Some(actor_of(caller, input.actor.unwrap_or_default())?),
        resource_refs: input.resource_refs.filter(|r| !r.is_empty()),
        attributes: input.attributes,
        details: input.details,
    })
}

/// The filter values a record's context answers to: `tenantId`, `accountId`,
/// `organizationId`.
pub fn context_filter_values(context: &DecisionContext) -> [Option<&str>; 3] {
    [
        context.tenant_id.as_deref(),
        context.account_id.as_deref(),
        context.organization_id.as_deref(),
    ]
}

/// 404 unless `id` is the caller's organization: other organizations are never confirmed.
pub fn own_organization(caller: &Caller, id: &str) -> ApiResult<()> {
    bounded("organizationId", id, MAX_KEY)?;
    match &caller.organization {
        Some(own) if own.id == id => Ok(()),
        _ => Err(ApiError::not_found("organization", id)),
    }
}

/// The scope dimension a `resourceRefs` key names, if any.
pub fn dimension(key: &str) -> Option<ScopeDimension> {
    match key {
        "projectId" => Some(ScopeDimension::Project),
        "environmentId" => Some(ScopeDimension::Environment),
        "resourceId" => Some(ScopeDimension::Resource),
        "serverId" => Some(ScopeDimension::Target),
        _ => None,
    }
}

/// The organization and scope of each reference (their limits are checked before).
pub fn check_refs(caller: &Caller, refs: &ResourceRefs) -> ApiResult<()> {
    for (key, value) in refs {
        if key == "organizationId" {
            own_organization(caller, value)?;
        }
        if let Some(dimension) = dimension(key) {
            caller.require_in_scope(dimension, value)?;
        }
    }
    Ok(())
}

/// Whether a deploy token's scope covers every id a record refers to (lists filter on it).
pub fn refs_visible(caller: &Caller, refs: Option<&ResourceRefs>) -> bool {
    refs.into_iter()
        .flatten()
        .all(|(key, value)| dimension(key).is_none_or(|dimension| caller.sees(dimension, value)))
}

/// The record's actor is always the caller; supplied fields must agree with it.
pub fn actor_of(caller: &Caller, given: ActorInput) -> ApiResult<Actor> {
    let actual = match &caller.principal {
        Principal::User { user_id, email, .. } => Actor {
            kind: crate::auth::ACTOR_USER.into(),
            id: Some(user_id.clone()),
            user_id: Some(user_id.clone()),
            email: Some(email.clone()),
        },
        Principal::DeployToken { .. } | Principal::Migration { .. } => {
            let (kind, id) = caller.actor();
            Actor {
                kind: kind.into(),
                id: Some(id.to_string()),
                user_id: None,
                email: None,
            }
        }
    };
    let checks = [
        ("kind", given.kind.as_deref(), Some(actual.kind.as_str())),
        ("id", given.id.as_deref(), actual.id.as_deref()),
        (
            "userId",
            given.user_id.as_deref(),
            actual.user_id.as_deref(),
        ),
        ("email", given.email.as_deref(), actual.email.as_deref()),
    ];
    for (field, given, actual) in checks {
        if given.is_some() && given != actual {
            return Err(ApiError::validation(
                &format!("actor.{field}"),
                format!("actor.{field} must describe the caller; omit actor to have it filled in"),
            ));
        }
    }
    Ok(actual)
}

/// Creates `object` (a create, never an overwrite), recording the caller as the actor, and
/// waits for the cache. `None` when an object of that name already exists.
pub async fn create_new<K>(
    api: &Api<K>,
    store: &Store<K>,
    caller: &Caller,
    mut object: K,
) -> ApiResult<Option<K>>
where
    K: Resource<DynamicType = ()>
        + Clone
        + Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let (kind, id) = caller.actor();
    let annotations = object.annotations_mut();
    annotations.insert(UPDATED_BY_KIND.into(), kind.into());
    annotations.insert(UPDATED_BY_ID.into(), id.into());
    let params = PostParams {
        field_manager: Some(crate::state::FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&params, &object).await {
        Ok(written) => {
            catch_up(store, &written).await?;
            Ok(Some(written))
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Sorts newest first and keeps `limit`.
pub fn newest<K: Resource>(mut objects: Vec<Arc<K>>, limit: u64) -> Vec<Arc<K>> {
    objects.sort_by_key(|o| {
        (
            std::cmp::Reverse(o.meta().creation_timestamp.clone().map(|t| t.0)),
            o.meta().name.clone(),
        )
    });
    objects.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    objects
}

/// Every given filter equals the record's value.
pub fn matches_all(filters: &[Option<&str>], values: &[Option<&str>]) -> bool {
    filters
        .iter()
        .zip(values)
        .all(|(filter, value)| filter.is_none() || filter == value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_match_only_equal_values() {
        assert!(matches_all(&[None, Some("cli")], &[Some("t"), Some("cli")]));
        assert!(!matches_all(&[Some("t2")], &[Some("t")]));
        assert!(!matches_all(&[Some("t")], &[None]));
    }
}
