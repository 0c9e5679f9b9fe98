//! Spec §4.1 deployment-overlay and route-surface decisions. Self-hosted Berth enables every
//! operation; each decision is stored as a record (OverlayDecision, RouteSurfaceDecision) in the
//! caller's organization so it can be listed and audited with `kubectl`. Both kinds share one
//! spec, one record shape and one pair of handlers; [`DecisionKind`] and [`OwnFields`] hold
//! what tells them apart.

use std::fmt::Debug;

use axum::extract::State;
use berth_api::overlays::DecisionInput;
use berth_crds::member::OrganizationRole;
use berth_crds::overlay_decision::{
    DecisionSpec, DecisionStatus, OverlayDecision, OverlayDecisionSpec,
};
use berth_crds::route_surface_decision::{RouteSurfaceDecision, RouteSurfaceDecisionSpec};
use kube::core::NamespaceResourceScope;
use kube::core::object::HasStatus;
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Endpoint;
use crate::auth::Caller;
use crate::cache::Caches;
use crate::domain::decision_records::{
    DEFAULT_LIMIT, MAX_LIMIT, context, context_filter_values, create_new, matches_all, newest,
    refs_visible,
};
use crate::domain::objects::all_in;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<DecisionList<Overlay>, _, _>(
            "/deployment-overlays",
            "List deployment-overlay decision records",
            list::<OverlayDecision>,
        ),
        Endpoint::post::<DecideOverlay, DecisionAnswer<Overlay>, _, _>(
            "/deployment-overlays",
            "Decide on a deployment-overlay operation and record it",
            decide::<OverlayDecision>,
        ),
        Endpoint::get::<DecisionList<RouteSurface>, _, _>(
            "/route-surfaces",
            "List route-surface decision records",
            list::<RouteSurfaceDecision>,
        ),
        Endpoint::post::<DecideRouteSurface, DecisionAnswer<RouteSurface>, _, _>(
            "/route-surfaces",
            "Decide on a route-surface operation and record it",
            decide::<RouteSurfaceDecision>,
        ),
    ]
}

/// What self-hosted Berth decides for every operation.
const ENABLED: &str = "enabled";
const REASON: &str = "self-hosted Berth enables every operation";

pub use berth_api::overlays::{
    DecideOverlay, DecideRouteSurface, DecisionAnswer, DecisionFields, DecisionList,
    DecisionRecord, DecisionResult, Overlay, OwnFields, RouteSurface,
};

/// A decision kind as its routes serve it: where its objects are, and what its spec and
/// request add to what every kind shares.
pub trait DecisionKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + HasStatus<Status = DecisionStatus>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Its request body.
    type Decide: DeserializeOwned + Send + 'static;
    /// What its records add.
    type Own: OwnFields;
    /// The prefix of new records' ids.
    const ID_PREFIX: &'static str;
    fn store(caches: &Caches) -> &Store<Self>;
    /// The part of its spec every kind shares.
    fn shared(&self) -> &DecisionSpec;
    fn own(&self) -> Self::Own;
    /// The body's checks that need no caller, then the body taken apart.
    fn take_apart(body: Self::Decide) -> ApiResult<(DecisionInput, Self::Own)>;
    fn object(id: &str, decision: DecisionSpec, own: Self::Own) -> Self;
}

impl DecisionKind for OverlayDecision {
    type Decide = DecideOverlay;
    type Own = Overlay;
    const ID_PREFIX: &'static str = "ovl";
    fn store(caches: &Caches) -> &Store<Self> {
        &caches.overlay_decisions
    }
    fn shared(&self) -> &DecisionSpec {
        &self.spec.decision
    }
    fn own(&self) -> Overlay {
        Overlay {}
    }
    fn take_apart(body: DecideOverlay) -> ApiResult<(DecisionInput, Overlay)> {
        body.validate()?;
        Ok((body.into_input(), Overlay {}))
    }
    fn object(id: &str, decision: DecisionSpec, _: Overlay) -> Self {
        Self::new(id, OverlayDecisionSpec { decision })
    }
}

impl DecisionKind for RouteSurfaceDecision {
    type Decide = DecideRouteSurface;
    type Own = RouteSurface;
    const ID_PREFIX: &'static str = "rsd";
    fn store(caches: &Caches) -> &Store<Self> {
        &caches.route_surface_decisions
    }
    fn shared(&self) -> &DecisionSpec {
        &self.spec.decision
    }
    fn own(&self) -> RouteSurface {
        let surface_kind = self.spec.surface_kind.clone();
        RouteSurface { surface_kind }
    }
    fn take_apart(body: DecideRouteSurface) -> ApiResult<(DecisionInput, RouteSurface)> {
        body.validate()?;
        let surface_kind = body.surface_kind.clone();
        Ok((body.into_input(), RouteSurface { surface_kind }))
    }
    fn object(id: &str, decision: DecisionSpec, own: RouteSurface) -> Self {
        let surface_kind = own.surface_kind;
        Self::new(
            id,
            RouteSurfaceDecisionSpec {
                decision,
                surface_kind,
            },
        )
    }
}

/// The REST record of a decision of either kind.
pub fn record_of<K: DecisionKind>(object: &K) -> DecisionRecord<K::Own> {
    let spec = object.shared().clone();
    let decided_at = object
        .status()
        .and_then(|s| s.decided_at.clone())
        .or_else(|| object.meta().creation_timestamp.clone());
    DecisionRecord {
        schema_version: K::Own::SCHEMA_VERSION.into(),
        fields: DecisionFields {
            id: object.name_any(),
            operation_key: spec.operation_key,
            decision: spec.decision,
            reason: spec.reason,
            source: spec.source,
            capability_key: spec.capability_key,
            decided_at: decided_at.as_ref().map(timestamp).unwrap_or_default(),
            context: spec.context,
        },
        own: object.own(),
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

/// The values a record answers [`FILTERS`] and then its kind's own filters with.
fn filter_values<K: OwnFields>(record: &DecisionRecord<K>) -> Vec<Option<&str>> {
    let fields = &record.fields;
    let [tenant, account, organization] = context_filter_values(&fields.context);
    let mut values = vec![
        tenant,
        account,
        organization,
        Some(fields.operation_key.as_str()),
        fields.capability_key.as_deref(),
        Some(fields.source.as_str()),
    ];
    values.extend(record.own.filter_values());
    values
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

async fn list<K: DecisionKind>(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<DecisionList<K::Own>>> {
    let (filters, limit) = read_filters(&query, K::Own::FILTERS)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let matching = all_in(K::store(&state.caches), &organization.namespace)
        .into_iter()
        .filter(|d| refs_visible(&caller, d.shared().context.resource_refs.as_ref()))
        .filter(|d| matches_all(&filters, &filter_values(&record_of::<K>(d))))
        .collect();
    let records = newest(matching, limit)
        .iter()
        .map(|d| record_of::<K>(d))
        .collect();
    Ok(Json(DecisionList { records }))
}

async fn decide<K: DecisionKind>(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<K::Decide>,
) -> ApiResult<Json<DecisionAnswer<K::Own>>> {
    let (input, own) = K::take_apart(body)?;
    let context = context(&caller, input.context)?;
    let decision = K::object(
        &new_id(K::ID_PREFIX),
        DecisionSpec {
            operation_key: input.operation_key,
            decision: ENABLED.into(),
            reason: Some(REASON.into()),
            source: input.source,
            capability_key: input.capability_key,
            context,
        },
        own,
    );
    let namespace = &caller.organization()?.namespace;
    let api = Api::<K>::namespaced(state.client.clone(), namespace);
    let created = create_new(&api, K::store(&state.caches), &caller, decision)
        .await?
        .ok_or_else(|| ApiError::conflict("a decision with this id exists; retry"))?;
    Ok(Json(DecisionAnswer {
        result: result_of(record_of(&created)),
    }))
}

/// The result of spec §2.2 around a new record.
fn result_of<K: OwnFields>(record: DecisionRecord<K>) -> DecisionResult<K> {
    DecisionResult {
        operation_key: record.fields.operation_key.clone(),
        decision: record.fields.decision.clone(),
        allowed: record.fields.decision == ENABLED,
        reason: record.fields.reason.clone(),
        source: record.fields.source.clone(),
        own: record.own.clone(),
        record,
    }
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
        let record = serde_json::to_value(record_of(&decision)).unwrap();
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
        let record = record_of(&decision);
        let values = filter_values(&record);
        assert_eq!(values[..3], [Some("t-1"), None, Some("shop")]);
    }

    /// One generic result serves both kinds; the route-surface one keeps `surfaceKind` between
    /// `source` and `record`, and in the record after the shared fields.
    #[test]
    fn results_keep_their_field_order_on_the_wire() {
        let spec = json!({
            "operationKey": "routes.publish", "source": "cli", "surfaceKind": "generated-access",
        });
        let decision = RouteSurfaceDecision::new("rsd-1", serde_json::from_value(spec).unwrap());
        let wire = berth_api::wire::to_vec(&result_of(record_of(&decision))).unwrap();
        assert_eq!(
            String::from_utf8(wire).unwrap(),
            concat!(
                r#"{"operationKey":"routes.publish","decision":"enabled","allowed":true,"#,
                r#""source":"cli","surfaceKind":"generated-access","record":{"#,
                r#""schemaVersion":"route-surface.decision/v1","id":"rsd-1","#,
                r#""operationKey":"routes.publish","decision":"enabled","source":"cli","#,
                r#""decidedAt":"","surfaceKind":"generated-access"}}"#,
            )
        );
        let overlay = OverlayDecision::new(
            "ovl-1",
            serde_json::from_value(json!({
                "operationKey": "deployments.preview", "source": "cli",
            }))
            .unwrap(),
        );
        let wire = berth_api::wire::to_vec(&result_of(record_of(&overlay))).unwrap();
        assert!(String::from_utf8(wire).unwrap().ends_with(concat!(
            r#""source":"cli","record":{"schemaVersion":"deployment-overlay.decision/v1","#,
            r#""id":"ovl-1","operationKey":"deployments.preview","decision":"enabled","#,
            r#""source":"cli","decidedAt":""}}"#,
        )));
    }
}
