//! Spec §4.1 usage-intent records, idempotent by `idempotencyKey` within the organization: a
//! repeat, even a concurrent one, returns `duplicate: true` and the original record.

use axum::extract::State;
use berth_crds::common::Quantity;
use berth_crds::member::OrganizationRole;
use berth_crds::usage_intent::{UsageIntent, UsageIntentSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{Api, ResourceExt};
use sha2::{Digest, Sha256};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::decision_records::{
    DEFAULT_LIMIT, MAX_LIMIT, context, context_filter_values, create_new, matches_all, newest,
    refs_visible,
};
use crate::domain::objects::all_in;
use crate::domain::time::{parse_timestamp, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<UsageIntentList, _, _>("/usage-intents", "List usage-intent records", list),
        Endpoint::post::<RecordUsageIntent, UsageIntentAnswer, _, _>(
            "/usage-intents",
            "Record a usage intent (idempotent by idempotencyKey)",
            record,
        ),
    ]
}

pub use berth_api::usage_intents::{
    QuantityInput, RecordUsageIntent, UsageIntentAnswer, UsageIntentList, UsageIntentRecord,
    UsageIntentResult,
};

/// The object name of a usage intent: a digest of its key, so concurrent repeats collide on
/// the name and exactly one create wins.
pub fn usage_intent_name(idempotency_key: &str) -> String {
    let digest = hex::encode(Sha256::digest(idempotency_key.as_bytes()));
    format!("ui-{}", &digest[..40])
}

/// Why a record has its status, when it does not say itself.
fn reason_of(status: &str) -> Option<&'static str> {
    match status {
        "accepted" => Some("recorded; self-hosted Berth meters nothing against a plan"),
        _ => None,
    }
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
        reason: spec
            .reason
            .or_else(|| reason_of(&spec.status).map(str::to_string)),
        status: spec.status,
        source: spec.source,
        quantity: spec.quantity,
        // An intent that says nothing of when it happened happened when it was recorded.
        occurred_at: spec
            .occurred_at
            .as_ref()
            .or(recorded_at.as_ref())
            .map(timestamp),
        recorded_at: recorded_at.as_ref().map(timestamp).unwrap_or_default(),
        context: spec.context,
    }
}

async fn list(
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
            let [tenant, account, organization] = context_filter_values(&s.context);
            let values = [
                tenant,
                account,
                organization,
                Some(s.capability_key.as_str()),
                Some(s.source.as_str()),
            ];
            matches_all(&filters, &values)
        })
        .filter(|i| refs_visible(&caller, i.spec.context.resource_refs.as_ref()))
        .collect();
    let records = newest(matching, limit)
        .iter()
        .map(|i| usage_intent_record(i))
        .collect();
    Ok(Json(UsageIntentList { records }))
}

async fn record(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(mut body): JsonBody<RecordUsageIntent>,
) -> ApiResult<Json<UsageIntentAnswer>> {
    body.validate()?;
    let quantity = body.quantity.take().map(|q| Quantity {
        value: q.value,
        unit: q.unit,
    });
    let occurred_at: Option<Time> = body
        .occurred_at
        .as_deref()
        .map(|t| parse_timestamp("occurredAt", t))
        .transpose()?;
    let context = context(&caller, body.take_context())?;
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
            quantity,
            occurred_at,
            context,
        },
    );
    let api = Api::<UsageIntent>::namespaced(state.client.clone(), &namespace);
    let store = &state.caches.usage_intents;
    // berth-controller's bookkeeping adds `recordedAt` (the creation time) and `Ready`.
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
    Ok(Json(usage_intent_answer(&created, false)))
}

/// A repeat: the original record, unless it refers to ids outside a deploy token's scope.
fn duplicate(caller: &Caller, original: &UsageIntent) -> ApiResult<Json<UsageIntentAnswer>> {
    if !refs_visible(caller, original.spec.context.resource_refs.as_ref()) {
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
}
