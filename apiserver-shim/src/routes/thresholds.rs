//! Spec §4.5 `GET`/`POST /runtime-monitoring/thresholds`: the ThresholdPolicy of one scope in
//! the caller's organization, and its evaluation as berth-controller last wrote it. One policy
//! per scope, named after it; a POST creates or replaces it. Non-enforcing: crossing a
//! threshold is reported (status, conditions, Kubernetes Events), nothing is ever stopped.

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_api::monitoring::SourceError;
use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::{MonitoringSample, ScopeKind};
use berth_crds::threshold_policy::{
    CrossedRule, MonitoringScope, Severity, ThresholdEvaluation, ThresholdPolicy,
    ThresholdPolicySpec, ThresholdRule,
};
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use berth_observations::SampleQuery;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::DeleteParams;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::cache::wait_deleted;
use crate::domain::fields::bounded;
use crate::domain::monitoring_scope::{ScopeIds, check_scope_ids, with_scope_params};
use crate::domain::objects::find_in;
use crate::domain::time::{timestamp, utc_range};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::observation_store::store_call;
use crate::state::AppState;
use crate::write;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<ThresholdsShow, _, _>(
            "/runtime-monitoring/thresholds",
            "The threshold policy of a scope and its latest evaluation (query: policyId, or \
             scope.kind with the kind's id: scope.serverId, scope.projectId, \
             scope.environmentId, scope.resourceId, scope.deploymentId; window.from, \
             window.to (UTC, ending in Z) are checked and echoed)",
            show,
        ),
        Endpoint::post::<SetThresholds, ThresholdsAnswer, _, _>(
            "/runtime-monitoring/thresholds",
            "Create or replace the threshold policy of a scope (admins); non-enforcing: \
             crossings are reported as status, conditions and Kubernetes Events, nothing is \
             stopped or throttled",
            set,
        ),
        Endpoint::delete::<DeleteThresholds, IdResponse, _, _>(
            "/runtime-monitoring/thresholds/{policyId}",
            "Delete a threshold policy (admins; the policyId GET and POST answer): its scope \
             is no longer evaluated",
            delete,
        ),
    ]
}

/// Beside the scope's.
const PARAMS: &[&str] = &["policyId", "window.from", "window.to"];

use berth_api::thresholds::{Crossing, POLICY_NAME_MAX, RuleFields, actor_kind};
pub use berth_api::thresholds::{
    DeleteThresholds, Evaluation, MAX_RULES, POLICY_SCHEMA_VERSION, PolicyRecord, RuleInput,
    SHOW_SCHEMA_VERSION, ScopeInput, SetThresholds, ThresholdsAnswer, ThresholdsShow, Window,
};

/// What a GET names: a policy by id, or a scope.
#[derive(Debug, PartialEq)]
enum Wanted {
    Policy(String),
    Scope(MonitoringScope),
}

fn parse_query(query: &QueryParams) -> ApiResult<(Wanted, Option<Window>)> {
    known_params(query, &with_scope_params(PARAMS))?;
    let window = parse_window(query)?;
    if let Some(id) = query.string("policyId")? {
        bounded("policyId", id, POLICY_NAME_MAX)?;
        return Ok((Wanted::Policy(id.to_string()), window));
    }
    let kinds: Vec<&str> = ScopeKind::ALL.iter().map(|k| k.as_str()).collect();
    let kind = query.one_of("scope.kind", &kinds, None)?.ok_or_else(|| {
        ApiError::validation("scope.kind", "give policyId, or scope.kind and its id")
    })?;
    let id = |field: &str| query.string(field).map(|v| v.map(str::to_string));
    let scope = MonitoringScope {
        kind: kind.to_string(),
        server_id: id("scope.serverId")?,
        project_id: id("scope.projectId")?,
        environment_id: id("scope.environmentId")?,
        resource_id: id("scope.resourceId")?,
        deployment_id: id("scope.deploymentId")?,
    };
    scope.policy_name()?;
    Ok((Wanted::Scope(scope), window))
}

/// `window.from`/`window.to`: UTC, ending in `Z`, in order.
fn parse_window(query: &QueryParams) -> ApiResult<Option<Window>> {
    let (from, to) = utc_range(query, "window.from", "window.to")?;
    let shown = |t: Option<Timestamp>| t.map(|t| t.to_string());
    Ok((from.is_some() || to.is_some()).then(|| Window {
        from: shown(from),
        to: shown(to),
    }))
}

fn check_scope(state: &AppState, caller: &Caller, scope: &MonitoringScope) -> ApiResult<()> {
    let ids = ScopeIds {
        server: scope.server_id.as_deref(),
        project: scope.project_id.as_deref(),
        environment: scope.environment_id.as_deref(),
        resource: scope.resource_id.as_deref(),
        deployment: scope.deployment_id.as_deref(),
    };
    check_scope_ids(state, caller, ids)
}

/// The object a policy's scope names (same namespace), as the policy's owner: the garbage
/// collector removes the policy once the object is deleted (a deployment's goes when its
/// attempt leaves the history).
fn scope_owner(
    state: &AppState,
    namespace: &str,
    scope: &MonitoringScope,
) -> Option<OwnerReference> {
    let caches = &state.caches;
    let id = |id: &Option<String>| id.clone().unwrap_or_default();
    match ScopeKind::parse(&scope.kind)? {
        ScopeKind::Server => owner_in(&caches.servers, namespace, &id(&scope.server_id)),
        ScopeKind::Project => owner_in(&caches.projects, namespace, &id(&scope.project_id)),
        ScopeKind::Environment => {
            owner_in(&caches.environments, namespace, &id(&scope.environment_id))
        }
        ScopeKind::Resource => owner_in(&caches.resources, namespace, &id(&scope.resource_id)),
        ScopeKind::Deployment => {
            owner_in(&caches.deployments, namespace, &id(&scope.deployment_id))
        }
    }
}

fn owner_in<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<OwnerReference>
where
    K: kube::Resource<DynamicType = ()> + Clone,
{
    store
        .get(&ObjectRef::new(name).within(namespace))?
        .owner_ref(&())
}

/// The body, checked, as a policy spec; every error names its field. The checks are all
/// `berth-api`'s (the CLI runs them too): the scope, the number of rules, each rule.
fn spec_of(body: SetThresholds) -> ApiResult<ThresholdPolicySpec> {
    body.validate()?;
    let SetThresholds {
        scope,
        rules,
        enabled,
    } = body;
    let scope = MonitoringScope::from(scope);
    let rules = rules.into_iter().enumerate().map(rule_of).collect();
    Ok(ThresholdPolicySpec {
        scope,
        rules,
        enabled: enabled.unwrap_or(true),
    })
}

/// The rule stored for `input`, with `berth-api`'s defaults.
fn rule_of((index, input): (usize, RuleInput)) -> ThresholdRule {
    let RuleFields {
        comparator,
        for_samples,
        ..
    } = input.fields();
    ThresholdRule {
        rule_id: format!("rule-{}", index + 1),
        signal: input.signal,
        metric: input.metric,
        warning: input.warning,
        critical: input.critical,
        comparator,
        for_samples,
        clear_at: input.clear_at,
    }
}

/// The policy as spec §2.2 records it. Who changed it and when: the actor the shim recorded,
/// and the time berth-controller stamped for this generation (else `written_at`).
fn record(policy: &ThresholdPolicy, written_at: Option<Timestamp>) -> PolicyRecord {
    let change = policy.status.clone().unwrap_or_default().change;
    let annotations = policy.annotations();
    let current = change.observed_generation == policy.metadata.generation;
    let stamped = change
        .updated_at
        .as_ref()
        .filter(|_| current)
        .map(timestamp);
    let updated_at = stamped
        .or_else(|| written_at.map(|t| t.to_string()))
        .or_else(|| policy.metadata.creation_timestamp.as_ref().map(timestamp))
        .unwrap_or_default();
    let actor = |annotation: &str, recorded: Option<String>| {
        annotations
            .get(annotation)
            .cloned()
            .or(recorded)
            .unwrap_or_else(|| "unknown".into())
    };
    let actor_id = actor(UPDATED_BY_ID, change.updated_by_actor_id);
    let kind = actor(UPDATED_BY_KIND, change.updated_by_actor_kind);
    PolicyRecord {
        schema_version: POLICY_SCHEMA_VERSION.into(),
        policy_id: policy.name_any(),
        scope: policy.spec.scope.clone(),
        // As read: a former metric name written with kubectl shows as its current one.
        rules: policy.spec.read().rules,
        enabled: policy.spec.enabled,
        updated_at,
        updated_by_actor_kind: actor_kind(&kind, &actor_id).into(),
        updated_by_actor_id: actor_id,
    }
}

/// The evaluation on the wire: what berth-controller last wrote (it writes only when the state
/// changes), brought up to `newest`, the newest sample of the scope it has evaluated since.
fn evaluation(
    written: Option<&ThresholdEvaluation>,
    newest: Option<&MonitoringSample>,
) -> Evaluation {
    let Some(written) = written else {
        return Evaluation {
            state: "unknown".into(),
            evaluated_at: None,
            source_sample_id: None,
            crossed: Vec::new(),
            next_actions: Vec::new(),
            source_errors: Vec::new(),
        };
    };
    let within_bounds = written.state == Severity::Ok;
    let source_sample_id = match newest {
        Some(sample) if within_bounds => Some(sample.sample_id.clone()),
        _ => written.source_sample_id.clone(),
    };
    Evaluation {
        state: written.state.as_str().to_string(),
        evaluated_at: Some(newest.map_or_else(
            || timestamp(&written.evaluated_at),
            |s| s.collected_at.clone(),
        )),
        source_sample_id,
        crossed: written.crossed.iter().map(crossing).collect(),
        next_actions: written.next_actions.clone(),
        source_errors: written
            .source_errors
            .iter()
            .map(|e| SourceError {
                source: e.source.clone(),
                code: e.code.clone(),
                message: e.message.clone(),
                retriable: e.retryable,
            })
            .collect(),
    }
}

fn crossing(crossed: &CrossedRule) -> Crossing {
    Crossing {
        rule_id: crossed.rule_id.clone(),
        signal: crossed.signal.clone(),
        metric: crossed.metric.clone(),
        severity: crossed.severity.as_str().to_string(),
        observed_value: crossed.observed_value,
        boundary: crossed.boundary,
        resource_id: crossed.resource_id.clone(),
    }
}

/// The newest sample of the policy's scope collected after its written evaluation: every
/// sample of an enabled, consistent policy's scope is evaluated as it is recorded.
async fn newest_evaluated(state: &AppState, policy: &ThresholdPolicy) -> Option<MonitoringSample> {
    let written = policy.status.as_ref()?.evaluation.as_ref()?;
    if !policy.spec.enabled || policy.spec.problem().is_err() {
        return None;
    }
    let scope = &policy.spec.scope;
    let kind = ScopeKind::parse(&scope.kind);
    let query = SampleQuery {
        namespace: policy.namespace().unwrap_or_default(),
        // A server scope takes its host and its containers; the others containers only.
        kind: kind.filter(|k| *k != ScopeKind::Server),
        server: scope.server_id.clone(),
        project: scope.project_id.clone(),
        environment: scope.environment_id.clone(),
        resource: scope.resource_id.clone(),
        deployment: scope.deployment_id.clone(),
        from_ms: written.evaluated_at.0.as_millisecond() + 1,
        to_ms: Timestamp::now().as_millisecond(),
        limit: 1,
    };
    let read = store_call(&state.observations, "monitoring samples", move |store| {
        store.samples(&query)
    })
    .await;
    // The evaluation as written is still true when the store cannot say more.
    read.ok()?.into_iter().next()
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<ThresholdsShow>> {
    let (wanted, window) = parse_query(&query)?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let name = match &wanted {
        Wanted::Policy(id) => id.clone(),
        Wanted::Scope(scope) => {
            check_scope(&state, &caller, scope)?;
            scope.policy_name()?
        }
    };
    let policy = find_in(
        &state.caches.threshold_policies,
        &organization.namespace,
        &name,
        "threshold policy",
    )?;
    // A policy id reveals the scope: the caller must see it too.
    check_scope(&state, &caller, &policy.spec.scope)?;
    let newest = newest_evaluated(&state, &policy).await;
    let written = policy.status.as_ref().and_then(|s| s.evaluation.as_ref());
    Ok(Json(ThresholdsShow {
        schema_version: SHOW_SCHEMA_VERSION.into(),
        scope: policy.spec.scope.clone(),
        generated_at: Timestamp::now().to_string(),
        window,
        evaluation: evaluation(written, newest.as_ref()),
        policy: record(&policy, None),
    }))
}

async fn set(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<SetThresholds>,
) -> ApiResult<Json<ThresholdsAnswer>> {
    let spec = spec_of(body)?;
    let organization = caller.require_role(OrganizationRole::Admin)?.clone();
    check_scope(&state, &caller, &spec.scope)?;
    let name = spec.scope.policy_name()?;
    let owner = scope_owner(&state, &organization.namespace, &spec.scope);
    let mut policy = ThresholdPolicy::new(&name, spec);
    policy.metadata.namespace = Some(organization.namespace.clone());
    // The policy of a server, project, environment, resource or deployment goes with it; an
    // organization's goes with the organization's namespace.
    policy.metadata.owner_references = owner.map(|o| vec![o]);
    let api = Api::<ThresholdPolicy>::namespaced(state.client.clone(), &organization.namespace);
    let written = write::apply(
        &api,
        &state.caches.threshold_policies,
        Some(&caller),
        policy,
    )
    .await?;
    Ok(Json(ThresholdsAnswer {
        policy: record(&written, Some(Timestamp::now())),
    }))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<DeleteThresholds>,
) -> ApiResult<Json<IdResponse>> {
    bounded("policyId", &id, POLICY_NAME_MAX)?;
    let organization = caller.require_role(OrganizationRole::Admin)?.clone();
    let policy = find_in(
        &state.caches.threshold_policies,
        &organization.namespace,
        &id,
        "threshold policy",
    )?;
    // A deploy token outside the policy's scope learns nothing of it.
    check_scope(&state, &caller, &policy.spec.scope)?;
    let api = Api::<ThresholdPolicy>::namespaced(state.client.clone(), &organization.namespace);
    let marked =
        crate::write::delete(&api, policy.as_ref(), &DeleteParams::default(), &caller).await?;
    wait_deleted(&state.caches.threshold_policies, &policy, marked).await?;
    tracing::info!(policy = %id, "threshold policy deleted");
    Ok(Json(IdResponse { id }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::threshold_policy::Comparator;
    use serde_json::json;

    fn body(value: serde_json::Value) -> ApiResult<ThresholdPolicySpec> {
        spec_of(crate::extract::parse_json(value.to_string().as_bytes())?)
    }

    fn server_rule(rule: serde_json::Value) -> serde_json::Value {
        json!({"scope": {"kind": "server", "serverId": "edge"}, "rules": [rule]})
    }

    #[test]
    fn the_wire_spells_the_crd_scope_kinds() {
        let kinds: Vec<&str> = ScopeKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(kinds, berth_api::thresholds::SCOPE_KINDS);
    }

    #[test]
    fn a_valid_body_becomes_the_spec_with_defaults() {
        let spec = body(server_rule(json!({
            "signal": "memory", "metric": "usedBytes", "warning": 1, "critical": 1e18,
        })))
        .unwrap();
        let rule = &spec.rules[0];
        assert_eq!(rule.rule_id, "rule-1");
        assert_eq!(rule.comparator, Comparator::GreaterThanOrEqual);
        assert_eq!(rule.for_samples, 1);
        assert!(spec.enabled);
        assert_eq!(spec.scope.policy_name().unwrap(), "server-edge");
    }

    #[test]
    fn every_bad_body_is_a_422_naming_its_field() {
        let rule = |extra: serde_json::Value| {
            let mut rule =
                json!({"signal": "cpu", "metric": "containerCpuPercent", "critical": 90});
            rule.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            server_rule(rule)
        };
        for (value, field) in [
            (rule(json!({"signal": "gpu"})), "rules[0].signal"),
            (rule(json!({"metric": "cpuPercent"})), "rules[0].metric"),
            (rule(json!({"metric": "usedBytes"})), "rules[0].metric"),
            (rule(json!({"comparator": "above"})), "rules[0].comparator"),
            (rule(json!({"warning": 95})), "rules[0].warning"),
            (
                rule(json!({"comparator": "less-than", "warning": 80})),
                "rules[0].warning",
            ),
            (rule(json!({"forSamples": 0})), "rules[0].forSamples"),
            (rule(json!({"forSamples": 101})), "rules[0].forSamples"),
            (
                rule(json!({"warning": 80, "clearAt": 85})),
                "rules[0].clearAt",
            ),
            (rule(json!({"critical": "high"})), "rules[0].critical"),
            (rule(json!({"threshold": 1})), "rules[0].threshold"),
            (
                json!({"scope": {"kind": "server"}, "rules": []}),
                "scope.serverId",
            ),
            (
                json!({"scope": {"kind": "cluster"}, "rules": []}),
                "scope.kind",
            ),
            (
                json!({"scope": {"kind": "server", "serverId": "edge"}, "rules": []}),
                "rules",
            ),
            (
                json!({"scope": {"kind": "server", "serverId": " "}, "rules": []}),
                "scope.serverId",
            ),
        ] {
            let error = body(value.clone()).unwrap_err();
            assert_eq!(error.status, 422, "{value}");
            assert_eq!(error.body.details["field"], field, "{value}");
        }
    }

    #[test]
    fn a_policy_written_with_a_former_metric_name_shows_the_current_one() {
        let mut spec = body(server_rule(json!({
            "signal": "memory", "metric": "usedBytes", "critical": 1e18,
        })))
        .unwrap();
        spec.rules[0].metric = "memoryUsedBytes".into();
        let shown = record(&ThresholdPolicy::new("server-edge", spec), None);
        assert_eq!(shown.rules[0].signal, "memory");
        assert_eq!(shown.rules[0].metric, "usedBytes");
    }

    #[test]
    fn the_query_names_a_policy_or_a_scope_and_checks_the_window() {
        let query = |pairs: &[(&str, &str)]| parse_query(&QueryParams::from_pairs(pairs));
        let (wanted, window) = query(&[("policyId", "server-edge")]).unwrap();
        assert_eq!(wanted, Wanted::Policy("server-edge".into()));
        assert_eq!(window, None);
        let (wanted, window) = query(&[
            ("scope.kind", "resource"),
            ("scope.resourceId", "web"),
            ("window.to", "2030-01-01T00:00:00Z"),
        ])
        .unwrap();
        let Wanted::Scope(scope) = wanted else {
            panic!("a scope")
        };
        assert_eq!(scope.policy_name().unwrap(), "resource-web");
        assert_eq!(window.unwrap().to.as_deref(), Some("2030-01-01T00:00:00Z"));
        for (pairs, field) in [
            (vec![], "scope.kind"),
            (vec![("scope.kind", "server")], "scope.serverId"),
            (vec![("scope.kind", "cluster")], "scope.kind"),
            (vec![("policyId", "")], "policyId"),
            (
                vec![
                    ("policyId", "p"),
                    ("window.from", "2030-01-01T00:00:00+01:00"),
                ],
                "window.from",
            ),
            (vec![("policy", "p")], "policy"),
        ] {
            let error = query(&pairs).unwrap_err();
            assert_eq!(error.status, 422, "{pairs:?}");
            assert_eq!(error.body.details["field"], field, "{pairs:?}");
        }
    }
}
