//! Spec §4.1 decisions: capability and entitlement queries (self-hosted Berth allows and
//! entitles everything) and usage-intent records, idempotent by `idempotencyKey`. The checks on
//! a record's context (organization, actor, resource references) live here too; deployment
//! overlays and route surfaces (`overlays.rs`) share them.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use berth_crds::common::{Actor, JsonMap, Quantity, ResourceRefs};
use berth_crds::condition::{Condition, ConditionStatus, READY};
use berth_crds::member::OrganizationRole;
use berth_crds::usage_intent::{UsageIntent, UsageIntentSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::PostParams;
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Endpoint;
use super::common::{all_in, bounded, known_params, merge_status, parse_timestamp, timestamp};
use crate::auth::{Caller, Principal, ScopeDimension};
use crate::cache::catch_up;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::state::AppState;
use crate::write::{UPDATED_BY_ID, UPDATED_BY_KIND};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CapabilityQuery, CapabilityAnswer, _, _>(
            "/capabilities/query",
            "Whether operations are allowed (self-hosted: always)",
            capabilities,
        ),
        Endpoint::post::<EntitlementQuery, EntitlementAnswer, _, _>(
            "/entitlements/query",
            "Whether capabilities are entitled (self-hosted: always)",
            entitlements,
        ),
        Endpoint::get::<UsageIntentList, _, _>(
            "/usage-intents",
            "List usage-intent records",
            list_usage_intents,
        ),
        Endpoint::post::<RecordUsageIntent, UsageIntentAnswer, _, _>(
            "/usage-intents",
            "Record a usage intent (idempotent by idempotencyKey)",
            record_usage_intent,
        ),
    ]
}

/// Largest `limit` of the record lists (spec §8).
pub const MAX_LIMIT: u64 = 500;
/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 100;
/// Most queries one capability or entitlement call may carry.
pub const MAX_QUERIES: usize = 100;
/// Longest key, source or id a record holds.
pub const MAX_KEY: usize = 256;
/// Largest `attributes` or `details` map, as JSON: records live in etcd.
pub const MAX_MAP_BYTES: usize = 16 * 1024;
/// Most entries in `resourceRefs`.
pub const MAX_REFS: usize = 32;
/// What a self-hosted installation reports as the source of its answers.
pub const SOURCE: &str = "self-hosted";
const SELF_HOSTED_REASON: &str = "self-hosted Berth has no plan limits";
/// Reason on the `Ready` condition of a stored record.
const REASON_RECORDED: &str = "Recorded";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapabilityQuery {
    /// 1-100 operations to decide on.
    pub queries: Vec<OperationKeyQuery>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationKeyQuery {
    /// Operation, e.g. `deployments.create`.
    pub operation_key: String,
}

/// The Capability decision record of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityDecision {
    pub operation_key: String,
    pub allowed: bool,
    /// `unrestricted` on self-hosted Berth.
    pub mode: String,
    pub reason: String,
}

#[derive(Serialize, JsonSchema)]
pub struct CapabilityAnswer {
    pub capabilities: Vec<CapabilityDecision>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EntitlementQuery {
    /// 1-100 capabilities to check.
    pub queries: Vec<CapabilityKeyQuery>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapabilityKeyQuery {
    /// Capability, e.g. `custom-domains`.
    pub capability_key: String,
}

/// The Entitlement record of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Entitlement {
    pub capability_key: String,
    pub entitled: bool,
    /// `entitled`.
    pub status: String,
    /// `unrestricted`: nothing limits the capability.
    pub mode: String,
    pub reason: String,
    /// `self-hosted`.
    pub source: String,
}

#[derive(Serialize, JsonSchema)]
pub struct EntitlementAnswer {
    pub entitlements: Vec<Entitlement>,
}

/// Context fields every decision and usage record accepts.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActorInput {
    /// `user` or `deploy-token`; must be the caller's kind.
    pub kind: Option<String>,
    /// Must be the caller's id (user id or deploy token id).
    pub id: Option<String>,
    /// Must be the signed-in user's id.
    pub user_id: Option<String>,
    /// Must be the signed-in user's email.
    pub email: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QuantityInput {
    /// A finite amount, at least 0.
    pub value: f64,
    /// Unit, e.g. `deployment`.
    pub unit: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RecordUsageIntent {
    /// Repeats with the same key (within the organization) return the original record.
    pub idempotency_key: String,
    /// Capability used.
    pub capability_key: String,
    /// What reports the intent, e.g. `cli`.
    pub source: String,
    pub tenant_id: Option<String>,
    pub account_id: Option<String>,
    /// The caller's organization (filled in when omitted).
    pub organization_id: Option<String>,
    /// Who acted; the caller, filled in when omitted.
    pub actor: Option<ActorInput>,
    /// Ids the intent is about; a deploy token may name only ids in its scope.
    pub resource_refs: Option<ResourceRefs>,
    pub quantity: Option<QuantityInput>,
    /// When the usage happened (ISO 8601).
    pub occurred_at: Option<String>,
    /// Arbitrary attributes (at most 16 KiB of JSON).
    pub attributes: Option<JsonMap>,
    /// Arbitrary details (at most 16 KiB of JSON).
    pub details: Option<JsonMap>,
}

/// The Usage-intent record of spec §2.2.
#[derive(Serialize, JsonSchema, Clone)]
#[serde(rename_all = "camelCase")]
pub struct UsageIntentRecord {
    /// `usage-intent.record/v1`.
    pub schema_version: String,
    pub id: String,
    pub idempotency_key: String,
    pub capability_key: String,
    /// `accepted`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<Actor>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_refs: Option<ResourceRefs>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantity: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
    pub recorded_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<JsonMap>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<JsonMap>,
}

/// The Usage-intent result of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageIntentResult {
    pub idempotency_key: String,
    pub capability_key: String,
    pub accepted: bool,
    /// True when the key was seen before; `record` is then the original.
    pub duplicate: bool,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    pub record: UsageIntentRecord,
}

#[derive(Serialize, JsonSchema)]
pub struct UsageIntentAnswer {
    pub result: UsageIntentResult,
}

#[derive(Serialize, JsonSchema)]
pub struct UsageIntentList {
    pub records: Vec<UsageIntentRecord>,
}

async fn capabilities(
    _caller: Caller,
    JsonBody(body): JsonBody<CapabilityQuery>,
) -> ApiResult<Json<CapabilityAnswer>> {
    count_queries(body.queries.len())?;
    let mut capabilities = Vec::with_capacity(body.queries.len());
    for (index, query) in body.queries.into_iter().enumerate() {
        bounded(
            &format!("queries[{index}].operationKey"),
            &query.operation_key,
            MAX_KEY,
        )?;
        capabilities.push(CapabilityDecision {
            operation_key: query.operation_key,
            allowed: true,
            mode: "unrestricted".into(),
            reason: SELF_HOSTED_REASON.into(),
        });
    }
    Ok(Json(CapabilityAnswer { capabilities }))
}

async fn entitlements(
    _caller: Caller,
    JsonBody(body): JsonBody<EntitlementQuery>,
) -> ApiResult<Json<EntitlementAnswer>> {
    count_queries(body.queries.len())?;
    let mut entitlements = Vec::with_capacity(body.queries.len());
    for (index, query) in body.queries.into_iter().enumerate() {
        bounded(
            &format!("queries[{index}].capabilityKey"),
            &query.capability_key,
            MAX_KEY,
        )?;
        entitlements.push(Entitlement {
            capability_key: query.capability_key,
            entitled: true,
            status: "entitled".into(),
            mode: "unrestricted".into(),
            reason: SELF_HOSTED_REASON.into(),
            source: SOURCE.into(),
        });
    }
    Ok(Json(EntitlementAnswer { entitlements }))
}

fn count_queries(count: usize) -> ApiResult<()> {
    if count == 0 || count > MAX_QUERIES {
        return Err(ApiError::validation(
            "queries",
            format!("queries must hold 1 to {MAX_QUERIES} entries"),
        ));
    }
    Ok(())
}

/// The context every record carries, checked against the caller.
pub struct Context {
    pub tenant_id: Option<String>,
    pub account_id: Option<String>,
    pub organization_id: String,
    pub actor: Actor,
    pub resource_refs: Option<ResourceRefs>,
    pub attributes: Option<JsonMap>,
    pub details: Option<JsonMap>,
}

/// Checks a record's context: ids within limits, the organization is the caller's (any other
/// is a 404), the actor is the caller, and a deploy token names only ids in its scope.
#[allow(clippy::too_many_arguments)]
pub fn context(
    caller: &Caller,
    tenant_id: Option<String>,
    account_id: Option<String>,
    organization_id: Option<String>,
    actor: Option<ActorInput>,
    resource_refs: Option<ResourceRefs>,
    attributes: Option<JsonMap>,
    details: Option<JsonMap>,
) -> ApiResult<Context> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    for (field, value) in [("tenantId", &tenant_id), ("accountId", &account_id)] {
        if let Some(value) = value {
            bounded(field, value, MAX_KEY)?;
        }
    }
    if let Some(id) = &organization_id {
        own_organization(caller, id)?;
    }
    if let Some(refs) = &resource_refs {
        check_refs(caller, refs)?;
    }
    for (field, map) in [("attributes", &attributes), ("details", &details)] {
        let size = map
            .as_ref()
            .map(|m| serde_json::to_vec(m).map(|v| v.len()).unwrap_or(usize::MAX))
            .unwrap_or(0);
        if size > MAX_MAP_BYTES {
            return Err(ApiError::validation(
                field,
                format!("{field} must be at most {MAX_MAP_BYTES} bytes of JSON"),
            ));
        }
    }
    Ok(Context {
        tenant_id,
        account_id,
        organization_id: organization.id.clone(),
        actor: actor_of(caller, actor.unwrap_or_default())?,
        resource_refs: resource_refs.filter(|r| !r.is_empty()),
        attributes,
        details,
    })
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
fn dimension(key: &str) -> Option<ScopeDimension> {
    match key {
        "projectId" => Some(ScopeDimension::Project),
        "environmentId" => Some(ScopeDimension::Environment),
        "resourceId" => Some(ScopeDimension::Resource),
        "serverId" => Some(ScopeDimension::Target),
        _ => None,
    }
}

fn check_refs(caller: &Caller, refs: &ResourceRefs) -> ApiResult<()> {
    if refs.len() > MAX_REFS {
        return Err(ApiError::validation(
            "resourceRefs",
            format!("resourceRefs may hold at most {MAX_REFS} entries"),
        ));
    }
    for (key, value) in refs {
        bounded("resourceRefs", key, 64)?;
        bounded(&format!("resourceRefs.{key}"), value, MAX_KEY)?;
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
fn actor_of(caller: &Caller, given: ActorInput) -> ApiResult<Actor> {
    let actual = match &caller.principal {
        Principal::User { user_id, email, .. } => Actor {
            kind: crate::auth::ACTOR_USER.into(),
            id: Some(user_id.clone()),
            user_id: Some(user_id.clone()),
            email: Some(email.clone()),
        },
        Principal::DeployToken { token_id, .. } => Actor {
            kind: crate::auth::ACTOR_DEPLOY_TOKEN.into(),
            id: Some(token_id.clone()),
            user_id: None,
            email: None,
        },
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

/// The status a stored record gets: its time (the creation time, so every reader sees the same
/// value) and `Ready`.
pub fn recorded_status(field: &str, object: &impl Resource) -> serde_json::Value {
    let ready = Condition::new(
        READY,
        ConditionStatus::True,
        REASON_RECORDED,
        "the record is stored",
        object.meta().generation,
    );
    let mut status = serde_json::json!({
        "observedGeneration": object.meta().generation,
        "conditions": [ready],
    });
    status[field] = serde_json::json!(object.meta().creation_timestamp);
    status
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

/// The object name of a usage intent: a digest of its key, so concurrent repeats collide on
/// the name and exactly one create wins.
pub fn usage_intent_name(idempotency_key: &str) -> String {
    let digest = hex::encode(Sha256::digest(idempotency_key.as_bytes()));
    format!("ui-{}", &digest[..40])
}

/// Converts the custom resource to the REST record.
pub fn usage_intent_record(intent: &UsageIntent) -> UsageIntentRecord {
    let spec = intent.spec.clone();
    let recorded_at = intent
        .status
        .as_ref()
        .and_then(|s| s.recorded_at.clone())
        .or_else(|| intent.metadata.creation_timestamp.clone());
    UsageIntentRecord {
        schema_version: "usage-intent.record/v1".into(),
        id: intent.name_any(),
        idempotency_key: spec.idempotency_key,
        capability_key: spec.capability_key,
        status: spec.status,
        reason: spec.reason,
        source: spec.source,
        tenant_id: spec.tenant_id,
        account_id: spec.account_id,
        organization_id: spec.organization_id,
        actor: spec.actor,
        resource_refs: spec.resource_refs,
        quantity: spec.quantity,
        occurred_at: spec.occurred_at.as_ref().map(timestamp),
        recorded_at: recorded_at.as_ref().map(timestamp).unwrap_or_default(),
        attributes: spec.attributes,
        details: spec.details,
    }
}

async fn list_usage_intents(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<UsageIntentList>> {
    known_params(
        &query,
        &[
            "tenantId",
            "accountId",
            "organizationId",
            "capabilityKey",
            "source",
            "limit",
        ],
    )?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let filters = [
        query.string("tenantId")?,
        query.string("accountId")?,
        query.string("organizationId")?,
        query.string("capabilityKey")?,
        query.string("source")?,
    ];
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    let matching = all_in(&state.caches.usage_intents, &organization.namespace)
        .into_iter()
        .filter(|i| {
            let s = &i.spec;
            let values = [
                s.tenant_id.as_deref(),
                s.account_id.as_deref(),
                s.organization_id.as_deref(),
                Some(s.capability_key.as_str()),
                Some(s.source.as_str()),
            ];
            matches_all(&filters, &values)
        })
        .filter(|i| refs_visible(&caller, i.spec.resource_refs.as_ref()))
        .collect();
    let records = newest(matching, limit)
        .iter()
        .map(|i| usage_intent_record(i))
        .collect();
    Ok(Json(UsageIntentList { records }))
}

/// Every given filter equals the record's value.
pub fn matches_all(filters: &[Option<&str>], values: &[Option<&str>]) -> bool {
    filters
        .iter()
        .zip(values)
        .all(|(filter, value)| filter.is_none() || filter == value)
}

async fn record_usage_intent(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<RecordUsageIntent>,
) -> ApiResult<Json<UsageIntentAnswer>> {
    bounded("idempotencyKey", &body.idempotency_key, MAX_KEY)?;
    bounded("capabilityKey", &body.capability_key, MAX_KEY)?;
    bounded("source", &body.source, MAX_KEY)?;
    let quantity = match body.quantity {
        None => None,
        Some(q) => {
            if !q.value.is_finite() || q.value < 0.0 {
                return Err(ApiError::validation(
                    "quantity.value",
                    "quantity.value must be a finite number of at least 0",
                ));
            }
            bounded("quantity.unit", &q.unit, MAX_KEY)?;
            Some(Quantity {
                value: q.value,
                unit: q.unit,
            })
        }
    };
    let occurred_at: Option<Time> = body
        .occurred_at
        .as_deref()
        .map(|t| parse_timestamp("occurredAt", t))
        .transpose()?;
    let context = context(
        &caller,
        body.tenant_id,
        body.account_id,
        body.organization_id,
        body.actor,
        body.resource_refs,
        body.attributes,
        body.details,
    )?;
    let namespace = caller.organization()?.namespace.clone();
    let key = body.idempotency_key;
    let existing = state.caches.usage_intents.find(|i| {
        i.namespace().as_deref() == Some(namespace.as_str()) && i.spec.idempotency_key == key
    });
    if let Some(original) = existing {
        return duplicate(&caller, &original);
    }
    let name = usage_intent_name(&key);
    let intent = UsageIntent::new(
        &name,
        UsageIntentSpec {
            idempotency_key: key.clone(),
            capability_key: body.capability_key,
            source: body.source,
            status: "accepted".into(),
            reason: None,
            tenant_id: context.tenant_id,
            account_id: context.account_id,
            organization_id: Some(context.organization_id),
            actor: Some(context.actor),
            resource_refs: context.resource_refs,
            quantity,
            occurred_at,
            attributes: context.attributes,
            details: context.details,
        },
    );
    let api = Api::<UsageIntent>::namespaced(state.client.clone(), &namespace);
    let store = &state.caches.usage_intents;
    let Some(created) = create_new(&api, store, &caller, intent).await? else {
        // A concurrent repeat won the create: answer with what it stored.
        let original = api.get(&name).await?;
        if original.spec.idempotency_key != key {
            return Err(ApiError::conflict(format!(
                "usage intent {name} exists with another idempotency key"
            )));
        }
        return duplicate(&caller, &original);
    };
    let stored = merge_status(&api, store, &name, recorded_status("recordedAt", &created)).await?;
    Ok(Json(usage_intent_answer(&stored, false)))
}

/// A repeat: the original record, unless it refers to ids outside a deploy token's scope.
fn duplicate(caller: &Caller, original: &UsageIntent) -> ApiResult<Json<UsageIntentAnswer>> {
    if !refs_visible(caller, original.spec.resource_refs.as_ref()) {
        return Err(ApiError::conflict(
            "this idempotencyKey was already used for a record outside your token's scope",
        )
        .with_detail("field", "idempotencyKey"));
    }
    Ok(Json(usage_intent_answer(original, true)))
}

fn usage_intent_answer(intent: &UsageIntent, duplicate: bool) -> UsageIntentAnswer {
    let record = usage_intent_record(intent);
    UsageIntentAnswer {
        result: UsageIntentResult {
            idempotency_key: record.idempotency_key.clone(),
            capability_key: record.capability_key.clone(),
            accepted: record.status == "accepted",
            duplicate,
            status: record.status.clone(),
            reason: record.reason.clone(),
            source: record.source.clone(),
            record,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_intent_names_are_stable_dns_labels() {
        let name = usage_intent_name("deploy-42");
        assert_eq!(name, usage_intent_name("deploy-42"));
        assert_ne!(name, usage_intent_name("deploy-43"));
        assert_eq!(name.len(), 43);
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
    }

    #[test]
    fn filters_match_only_equal_values() {
        assert!(matches_all(&[None, Some("cli")], &[Some("t"), Some("cli")]));
        assert!(!matches_all(&[Some("t2")], &[Some("t")]));
        assert!(!matches_all(&[Some("t")], &[None]));
    }

    #[test]
    fn query_counts_are_bounded() {
        assert!(count_queries(0).is_err());
        assert!(count_queries(1).is_ok());
        assert!(count_queries(MAX_QUERIES + 1).is_err());
    }
}
