//! Spec §4.1 deployment-overlay and route-surface decisions. Self-hosted Berth enables every
//! operation; each decision is stored as a record (OverlayDecision, RouteSurfaceDecision) in the
//! caller's organization so it can be listed and audited with `kubectl`.

use crate::json::Json;
use axum::extract::State;
use berth_crds::common::DecisionContext;
use berth_crds::member::OrganizationRole;
use berth_crds::overlay_decision::{OverlayDecision, OverlayDecisionSpec};
use berth_crds::route_surface_decision::{RouteSurfaceDecision, RouteSurfaceDecisionSpec};
use kube::{Api, ResourceExt};
use schemars::JsonSchema;
use serde::Serialize;

use super::Endpoint;
use super::common::{all_in, known_params, timestamp};
use super::decisions::{
    ContextInput, DEFAULT_LIMIT, MAX_LIMIT, context, context_filter_values, create_new,
    matches_all, newest, refs_visible,
};
use crate::auth::Caller;
use crate::auth::token::new_id;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::state::AppState;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<OverlayList, _, _>(
            "/deployment-overlays",
            "List deployment-overlay decision records",
            list_overlays,
        ),
        Endpoint::post::<DecideOverlay, OverlayAnswer, _, _>(
            "/deployment-overlays",
            "Decide on a deployment-overlay operation and record it",
            decide_overlay,
        ),
        Endpoint::get::<RouteSurfaceList, _, _>(
            "/route-surfaces",
            "List route-surface decision records",
            list_route_surfaces,
        ),
        Endpoint::post::<DecideRouteSurface, RouteSurfaceAnswer, _, _>(
            "/route-surfaces",
            "Decide on a route-surface operation and record it",
            decide_route_surface,
        ),
    ]
}

/// What self-hosted Berth decides for every operation.
const ENABLED: &str = "enabled";
const REASON: &str = "self-hosted Berth enables every operation";

pub use berth_api::overlays::{DecideOverlay, DecideRouteSurface};

/// Fields the deployment-overlay and route-surface records share (spec §2.2).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionFields {
    pub id: String,
    pub operation_key: String,
    /// `enabled`.
    pub decision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_key: Option<String>,
    pub decided_at: String,
    #[serde(flatten)]
    pub context: DecisionContext,
}

/// The Deployment-overlay decision record of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverlayRecord {
    /// `deployment-overlay.decision/v1`.
    pub schema_version: String,
    #[serde(flatten)]
    pub fields: DecisionFields,
}

/// The Route-surface decision record of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteSurfaceRecord {
    /// `route-surface.decision/v1`.
    pub schema_version: String,
    #[serde(flatten)]
    pub fields: DecisionFields,
    pub surface_kind: String,
}

/// The Deployment-overlay result of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverlayResult {
    pub operation_key: String,
    pub decision: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    pub record: OverlayRecord,
}

/// The Route-surface result of spec §2.2.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteSurfaceResult {
    pub operation_key: String,
    pub decision: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub source: String,
    pub surface_kind: String,
    pub record: RouteSurfaceRecord,
}

#[derive(Serialize, JsonSchema)]
pub struct OverlayAnswer {
    pub result: OverlayResult,
}

#[derive(Serialize, JsonSchema)]
pub struct RouteSurfaceAnswer {
    pub result: RouteSurfaceResult,
}

#[derive(Serialize, JsonSchema)]
pub struct OverlayList {
    pub records: Vec<OverlayRecord>,
}

#[derive(Serialize, JsonSchema)]
pub struct RouteSurfaceList {
    pub records: Vec<RouteSurfaceRecord>,
}

/// The shared fields of either kind; both specs spell them the same.
macro_rules! decision_fields {
    ($object:expr) => {{
        let object = $object;
        let spec = object.spec.clone();
        let decided_at = object
            .status
            .as_ref()
            .and_then(|s| s.decided_at.clone())
            .or_else(|| object.metadata.creation_timestamp.clone());
        DecisionFields {
            id: object.name_any(),
            operation_key: spec.operation_key,
            decision: spec.decision,
            reason: spec.reason,
            source: spec.source,
            capability_key: spec.capability_key,
            decided_at: decided_at.as_ref().map(timestamp).unwrap_or_default(),
            context: spec.context,
        }
    }};
}

pub fn overlay_record(decision: &OverlayDecision) -> OverlayRecord {
    OverlayRecord {
        schema_version: "deployment-overlay.decision/v1".into(),
        fields: decision_fields!(decision),
    }
}

pub fn route_surface_record(decision: &RouteSurfaceDecision) -> RouteSurfaceRecord {
    RouteSurfaceRecord {
        schema_version: "route-surface.decision/v1".into(),
        fields: decision_fields!(decision),
        surface_kind: decision.spec.surface_kind.clone(),
    }
}

/// The list filters both kinds share, in the order of [`filter_values`].
const FILTERS: [&str; 6] = [
    "tenantId",
    "accountId",
    "organizationId",
    "operationKey",
    "capabilityKey",
    "source",
];

fn filter_values(fields: &DecisionFields) -> [Option<&str>; 6] {
    let [tenant, account, organization] = context_filter_values(&fields.context);
    [
        tenant,
        account,
        organization,
        Some(fields.operation_key.as_str()),
        fields.capability_key.as_deref(),
        Some(fields.source.as_str()),
    ]
}

/// Reads the shared filters, `extra` ones and `limit`.
fn read_filters<'a>(
    query: &'a QueryParams,
    extra: &[&str],
) -> ApiResult<(Vec<Option<&'a str>>, u64)> {
    let mut allowed: Vec<&str> = FILTERS.to_vec();
    allowed.extend_from_slice(extra);
    allowed.push("limit");
    known_params(query, &allowed)?;
    let mut filters = Vec::new();
    for name in FILTERS.iter().chain(extra) {
        filters.push(query.string(name)?);
    }
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    Ok((filters, limit))
}

async fn list_overlays(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<OverlayList>> {
    let (filters, limit) = read_filters(&query, &[])?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let matching = all_in(&state.caches.overlay_decisions, &organization.namespace)
        .into_iter()
        .filter(|d| refs_visible(&caller, d.spec.context.resource_refs.as_ref()))
        .filter(|d| matches_all(&filters, &filter_values(&overlay_record(d).fields)))
        .collect();
    let records = newest(matching, limit)
        .iter()
        .map(|d| overlay_record(d))
        .collect();
    Ok(Json(OverlayList { records }))
}

async fn list_route_surfaces(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<RouteSurfaceList>> {
    let (filters, limit) = read_filters(&query, &["surfaceKind"])?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let matching = all_in(
        &state.caches.route_surface_decisions,
        &organization.namespace,
    )
    .into_iter()
    .filter(|d| refs_visible(&caller, d.spec.context.resource_refs.as_ref()))
    .filter(|d| {
        let record = route_surface_record(d);
        let mut values = filter_values(&record.fields).to_vec();
        values.push(Some(record.surface_kind.as_str()));
        matches_all(&filters, &values)
    })
    .collect();
    let records = newest(matching, limit)
        .iter()
        .map(|d| route_surface_record(d))
        .collect();
    Ok(Json(RouteSurfaceList { records }))
}

async fn decide_overlay(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<DecideOverlay>,
) -> ApiResult<Json<OverlayAnswer>> {
    body.validate()?;
    let context = context(
        &caller,
        ContextInput {
            tenant_id: body.tenant_id,
            account_id: body.account_id,
            organization_id: body.organization_id,
            actor: body.actor,
            resource_refs: body.resource_refs,
            attributes: body.attributes,
            details: body.details,
        },
    )?;
    let id = new_id("ovl");
    let decision = OverlayDecision::new(
        &id,
        OverlayDecisionSpec {
            operation_key: body.operation_key,
            decision: ENABLED.into(),
            reason: Some(REASON.into()),
            source: body.source,
            capability_key: body.capability_key,
            context,
        },
    );
    let namespace = &caller.organization()?.namespace;
    let api = Api::<OverlayDecision>::namespaced(state.client.clone(), namespace);
    let store = &state.caches.overlay_decisions;
    let created = create_new(&api, store, &caller, decision)
        .await?
        .ok_or_else(|| ApiError::conflict("a decision with this id exists; retry"))?;
    let record = overlay_record(&created);
    Ok(Json(OverlayAnswer {
        result: OverlayResult {
            operation_key: record.fields.operation_key.clone(),
            decision: record.fields.decision.clone(),
            allowed: record.fields.decision == ENABLED,
            reason: record.fields.reason.clone(),
            source: record.fields.source.clone(),
            record,
        },
    }))
}

async fn decide_route_surface(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<DecideRouteSurface>,
) -> ApiResult<Json<RouteSurfaceAnswer>> {
    body.validate()?;
    let context = context(
        &caller,
        ContextInput {
            tenant_id: body.tenant_id,
            account_id: body.account_id,
            organization_id: body.organization_id,
            actor: body.actor,
            resource_refs: body.resource_refs,
            attributes: body.attributes,
            details: body.details,
        },
    )?;
    let id = new_id("rsd");
    let decision = RouteSurfaceDecision::new(
        &id,
        RouteSurfaceDecisionSpec {
            operation_key: body.operation_key,
            decision: ENABLED.into(),
            reason: Some(REASON.into()),
            source: body.source,
            surface_kind: body.surface_kind,
            capability_key: body.capability_key,
            context,
        },
    );
    let namespace = &caller.organization()?.namespace;
    let api = Api::<RouteSurfaceDecision>::namespaced(state.client.clone(), namespace);
    let store = &state.caches.route_surface_decisions;
    let created = create_new(&api, store, &caller, decision)
        .await?
        .ok_or_else(|| ApiError::conflict("a decision with this id exists; retry"))?;
    let record = route_surface_record(&created);
    Ok(Json(RouteSurfaceAnswer {
        result: RouteSurfaceResult {
            operation_key: record.fields.operation_key.clone(),
            decision: record.fields.decision.clone(),
            allowed: record.fields.decision == ENABLED,
            reason: record.fields.reason.clone(),
            source: record.fields.source.clone(),
            surface_kind: record.surface_kind.clone(),
            record,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The REST record keeps the context fields at its top level, beside `schemaVersion`.
    #[test]
    fn records_show_the_context_flat() {
        let spec = json!({
            "operationKey": "routes.publish", "decision": "enabled", "source": "cli",
            "surfaceKind": "generated-access", "tenantId": "t-1", "organizationId": "shop",
            "actor": {"kind": "user", "id": "usr-1"}, "resourceRefs": {"routeId": "rt-1"},
            "attributes": {"a": 1},
        });
        let decision = RouteSurfaceDecision::new("rsd-1", serde_json::from_value(spec).unwrap());
        let record = serde_json::to_value(route_surface_record(&decision)).unwrap();
        assert_eq!(
            record,
            json!({
                "schemaVersion": "route-surface.decision/v1", "id": "rsd-1",
                "operationKey": "routes.publish", "decision": "enabled", "source": "cli",
                "decidedAt": "", "tenantId": "t-1", "organizationId": "shop",
                "actor": {"kind": "user", "id": "usr-1"}, "resourceRefs": {"routeId": "rt-1"},
                "attributes": {"a": 1}, "surfaceKind": "generated-access",
            })
        );
        let record = route_surface_record(&decision);
        let values = filter_values(&record.fields);
        assert_eq!(values[..3], [Some("t-1"), None, Some("shop")]);
    }
}
