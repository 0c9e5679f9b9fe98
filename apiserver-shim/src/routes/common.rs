//! Shapes and helpers several route groups share.

use std::sync::Arc;

use berth_crds::deployment::Deployment;
use berth_crds::limits::DNS_LABEL_MAX;
use berth_crds::server::Server;
use berth_remote::ServerConnection;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Resource, ResourceExt};

use crate::error::ApiError;
use crate::services::server_access::AccessLease;
use crate::state::AppState;

pub use berth_api::common::Confirmation;

pub use berth_api::common::{CountResponse, IdResponse};

/// An ISO 8601 timestamp as the REST API prints it.
pub fn timestamp(time: &Time) -> String {
    time.0.to_string()
}

/// When an object was created, from its metadata.
pub fn created_at(meta: &ObjectMeta) -> String {
    meta.creation_timestamp
        .as_ref()
        .map(timestamp)
        .unwrap_or_default()
}

/// The object `name` in `namespace`, or a 404 that does not reveal other organizations' objects.
pub fn find_in<K>(
    store: &Store<K>,
    namespace: &str,
    name: &str,
    kind: &str,
) -> Result<Arc<K>, ApiError>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    store
        .get(&ObjectRef::new(name).within(namespace))
        .ok_or_else(|| ApiError::not_found(kind, name))
}

/// Deployment `name` in `namespace`: from the cache, or from the API server when the cache has
/// not seen it yet (one created a moment ago).
pub async fn find_deployment(
    state: &AppState,
    namespace: &str,
    name: &str,
) -> Result<Option<Deployment>, kube::Error> {
    let cached = state
        .caches
        .deployments
        .get(&ObjectRef::new(name).within(namespace));
    match cached {
        Some(deployment) => Ok(Some(Deployment::clone(&deployment))),
        None => {
            Api::<Deployment>::namespaced(state.client.clone(), namespace)
                .get_opt(name)
                .await
        }
    }
}

/// Every object of `store` in `namespace`.
pub fn all_in<K>(store: &Store<K>, namespace: &str) -> Vec<Arc<K>>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    store
        .state()
        .into_iter()
        .filter(|object| object.namespace().as_deref() == Some(namespace))
        .collect()
}

/// Checks a destructive call's `confirmation.<field>` repeats the target id.
pub fn confirm(
    given: Option<&str>,
    expected: &str,
    field: &str,
    kind: &str,
) -> Result<(), ApiError> {
    match given {
        None => Err(ApiError::validation(
            &format!("confirmation.{field}"),
            format!("confirmation.{field} is required: repeat the {kind} id to confirm"),
        )),
        Some(value) if value == expected => Ok(()),
        Some(_) => Err(ApiError::confirmation_mismatch(field, kind)),
    }
}

/// Rejects an empty or whitespace-only required string (spec §8: length >= 1).
pub fn non_empty(field: &str, value: &str) -> Result<(), ApiError> {
    Ok(berth_api::validate::non_empty(field, value)?)
}

/// A DNS label of 1..=`max` characters (the CRDs' `DNS_LABEL_PATTERN`): lowercase letters,
/// digits and dashes, not starting or ending with a dash. Slugs and service names are labels.
pub fn dns_label(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    Ok(berth_api::validate::dns_label(field, value, max)?)
}

/// The `slug` of a new or renamed organization, project or resource; `max` is the kind's
/// limit (`ORGANIZATION_SLUG_MAX` or `DNS_LABEL_MAX`).
pub fn validate_slug(slug: &str, max: usize) -> Result<(), ApiError> {
    dns_label("slug", slug, max)
}

/// A URL-safe slug from a display name: lowercase letters, digits and single dashes.
pub fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug: String = slug.chars().take(DNS_LABEL_MAX).collect();
    let slug = slug.trim_end_matches('-').to_string();
    if slug.is_empty() {
        "item".to_string()
    } else {
        slug
    }
}

/// Cursor pagination: the cursor is the offset of the next item, as a decimal string.
pub fn paginate<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let start = match cursor {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|offset| *offset <= items.len())
            .ok_or_else(|| ApiError::validation("cursor", "cursor is not one this API returned"))?,
    };
    let end = (start + limit).min(items.len());
    let next = (end < items.len()).then(|| end.to_string());
    Ok((items[start..end].to_vec(), next))
}

/// Rejects query parameters an endpoint does not know, so a misspelt filter is a 422 rather
/// than a silently unfiltered list.
pub fn known_params(query: &crate::extract::QueryParams, allowed: &[&str]) -> Result<(), ApiError> {
    let mut unknown: Vec<&String> = query
        .0
        .keys()
        .filter(|key| !allowed.contains(&key.as_str()))
        .collect();
    unknown.sort();
    match unknown.first() {
        None => Ok(()),
        Some(name) => Err(ApiError::validation(
            name,
            format!(
                "unknown query parameter {name}; this endpoint accepts: {}",
                allowed.join(", ")
            ),
        )),
    }
}

/// A required string of 1..=`max` characters (spec §8: identifiers and filters are >= 1).
pub fn bounded(field: &str, value: &str, max: usize) -> Result<(), ApiError> {
    Ok(berth_api::validate::bounded(field, value, max)?)
}

/// A query date-time in UTC (`Z`), as the spec's conventions ask for windows and cursors.
pub fn parse_utc(field: &str, value: &str) -> Result<k8s_openapi::jiff::Timestamp, ApiError> {
    let parsed = parse_timestamp(field, value)?;
    if !value.ends_with(['Z', 'z']) {
        return Err(ApiError::validation(
            field,
            format!("{field} must be a UTC date-time ending in Z, such as 2030-01-01T00:00:00Z"),
        ));
    }
    Ok(parsed.0)
}

/// The optional UTC bounds named `from` and `to` in the query, in order when both are given.
pub fn utc_range(
    query: &crate::extract::QueryParams,
    from: &str,
    to: &str,
) -> Result<(Option<Timestamp>, Option<Timestamp>), ApiError> {
    let utc = |field: &str| {
        query
            .string(field)?
            .map(|value| parse_utc(field, value))
            .transpose()
    };
    let (start, end) = (utc(from)?, utc(to)?);
    if let (Some(start), Some(end)) = (start, end) {
        in_order(from, to, start, end)?;
    }
    Ok((start, end))
}

/// A UTC window from the query: `to` defaults to `now`, `from` to `span` before `to`.
pub fn utc_window(
    query: &crate::extract::QueryParams,
    from: &str,
    to: &str,
    now: Timestamp,
    span: k8s_openapi::jiff::SignedDuration,
) -> Result<(Timestamp, Timestamp), ApiError> {
    let (start, end) = utc_range(query, from, to)?;
    let end = end.unwrap_or(now);
    let start = start.unwrap_or_else(|| end.checked_sub(span).unwrap_or(Timestamp::MIN));
    in_order(from, to, start, end)?;
    Ok((start, end))
}

fn in_order(from: &str, to: &str, start: Timestamp, end: Timestamp) -> Result<(), ApiError> {
    if start > end {
        return Err(ApiError::validation(
            from,
            format!("{from} must not be after {to}"),
        ));
    }
    Ok(())
}

/// The server's shared SSH connection (runtime logs, probes, capacity) and a lease that keeps
/// it open: [`ServerAccess::connect`](crate::services::server_access::ServerAccess::connect)
/// logged in with this process's client and cached credentials.
pub async fn server_connection(
    state: &AppState,
    server: &Server,
    action: &str,
) -> Result<(Arc<ServerConnection>, AccessLease), ApiError> {
    let credentials = &state.caches.ssh_credentials;
    state
        .server_access
        .connect(&state.client, credentials, server, action)
        .await
}

/// An ISO 8601 / RFC 3339 date-time with an offset, e.g. `2030-01-01T00:00:00Z`.
pub fn parse_timestamp(field: &str, value: &str) -> Result<Time, ApiError> {
    value
        .parse::<k8s_openapi::jiff::Timestamp>()
        .map(Time)
        .map_err(|_| {
            ApiError::validation(
                field,
                format!("{field} must be an ISO 8601 date-time such as 2030-01-01T00:00:00Z"),
            )
        })
}

/// Merges `status` into an object's status subresource (a JSON merge patch under the shim's
/// field manager, so fields other writers own are left alone) and waits for the cache.
pub async fn merge_status<K>(
    api: &kube::Api<K>,
    store: &Store<K>,
    name: &str,
    status: serde_json::Value,
) -> Result<K, ApiError>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = kube::api::PatchParams {
        field_manager: Some(crate::state::FIELD_MANAGER.into()),
        ..Default::default()
    };
    let patch = serde_json::json!({ "status": status });
    let written = api
        .patch_status(name, &params, &kube::api::Patch::Merge(&patch))
        .await?;
    crate::cache::catch_up(store, &written).await?;
    Ok(written)
}

/// Whether `name` can be a Kubernetes object name (no deployment is named otherwise).
pub fn object_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

/// An empty Secret `name` of `type_`, labelled as Berth's and with `owner_label: <owner's name>`,
/// owned by `owner` so it goes away with it.
pub fn owned_secret<K>(owner: &K, owner_label: &str, name: &str, type_: &str) -> Secret
where
    K: Resource<DynamicType = ()>,
{
    let reference = OwnerReference {
        api_version: K::api_version(&()).into(),
        kind: K::kind(&()).into(),
        name: owner.name_any(),
        uid: owner.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                [
                    (berth_crds::MANAGED_LABEL.to_string(), "true".to_string()),
                    (owner_label.to_string(), owner.name_any()),
                ]
                .into(),
            ),
            owner_references: Some(vec![reference]),
            ..Default::default()
        },
        type_: Some(type_.into()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_dns_labels() {
        assert_eq!(slugify("My Shop!  2"), "my-shop-2");
        assert_eq!(slugify("---"), "item");
        assert_eq!(slugify(&"a".repeat(100)).len(), 63);
    }

    #[test]
    fn slugs_and_labels_share_one_rule_with_a_limit_per_kind() {
        for good in ["a", "web-1", "0", &"a".repeat(58)] {
            assert!(validate_slug(good, 58).is_ok(), "{good}");
        }
        let too_long = "a".repeat(59);
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", "é", too_long.as_str()] {
            let error = validate_slug(bad, 58).unwrap_err();
            assert_eq!(error.status, 422, "{bad}");
            assert_eq!(error.body.details["field"], "slug");
            assert_eq!(error.body.details["max"], 58);
        }
        assert!(validate_slug(&too_long, DNS_LABEL_MAX).is_ok());
        let error = dns_label("services[0].name", "Web", DNS_LABEL_MAX).unwrap_err();
        assert_eq!(error.body.details["field"], "services[0].name");
        assert!(error.body.message.contains("1-63 lowercase letters"));
    }

    #[test]
    fn confirmation_must_repeat_the_id() {
        assert!(confirm(Some("prj-1"), "prj-1", "projectId", "project").is_ok());
        assert_eq!(
            confirm(Some("prj-2"), "prj-1", "projectId", "project")
                .unwrap_err()
                .status,
            409
        );
        assert_eq!(
            confirm(None, "prj-1", "projectId", "project")
                .unwrap_err()
                .status,
            422
        );
    }

    #[test]
    fn cursor_pages_reach_the_end() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = paginate(&items, None, 2).unwrap();
        assert_eq!(first, vec![0, 1]);
        let (second, next) = paginate(&items, next.as_deref(), 2).unwrap();
        assert_eq!(second, vec![2, 3]);
        let (last, next) = paginate(&items, next.as_deref(), 2).unwrap();
        assert_eq!((last, next), (vec![4], None));
        assert!(paginate(&items, Some("x"), 2).is_err());
    }
}
