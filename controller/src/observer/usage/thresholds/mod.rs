//! Runtime-monitoring thresholds (spec §4.5): on every monitoring tick, the server's samples
//! are held against the enabled ThresholdPolicies of its namespace whose scope they match. It
//! costs no I/O per tick: consecutive-breach counters live in memory, and only when a policy's
//! evaluated state changes is its status (`evaluation`, `ThresholdCrossed`) written and a
//! Kubernetes Event published, so existing Kubernetes alerting sees it. Non-enforcing:
//! nothing is ever stopped or throttled.

mod evaluation;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use berth_crds::condition::{self, Condition, ConditionStatus};
use berth_crds::monitoring::MonitoringSample;
use berth_crds::threshold_policy::{
    Severity, THRESHOLD_CROSSED, ThresholdEvaluation, ThresholdPolicy, WITHIN_BOUNDS,
};
use berth_remote::ServerId;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use serde_json::{Map, Value, json};

use self::evaluation::{Change, PolicyMemory, Summary, covers};
use crate::context::Context;
use crate::status::apply_fields_as_if_unchanged;

/// The evaluator's own field manager: the bookkeeping controller applies the policy's other
/// status fields as `berth-controller`, and its applies must not drop `evaluation`.
const FIELD_MANAGER: &str = "berth-threshold-evaluator";

/// Event reasons of the state changes.
pub const THRESHOLD_WARNING: &str = "ThresholdWarning";
pub const THRESHOLD_CRITICAL: &str = "ThresholdCritical";
pub const THRESHOLD_CLEARED: &str = "ThresholdCleared";

/// Every policy's counters, shared by the observers of all servers: a project's policy sees
/// the containers of every server it runs on.
static MEMORY: LazyLock<Mutex<HashMap<PolicyKey, PolicyMemory>>> = LazyLock::new(Mutex::default);

/// `(namespace, name)` of a policy.
type PolicyKey = (String, String);

/// Holds `samples`, one tick of server `server`, against the policies they fall under, and
/// reports every policy whose state changed.
pub async fn evaluate(context: &Context, server: &ServerId, samples: &[MonitoringSample]) {
    let policies: Vec<Arc<ThresholdPolicy>> = context
        .caches
        .threshold_policies
        .state()
        .into_iter()
        .filter(|policy| policy.namespace().as_deref() == Some(server.namespace.as_str()))
        .collect();
    let now = Timestamp::now();
    let changes: Vec<Change> = {
        let mut memory = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        forget_deleted(&mut memory, &server.namespace, &policies);
        policies
            .iter()
            .filter(|policy| evaluated(policy) && covers(&policy.spec.scope, &server.name))
            .filter_map(|policy| {
                let key = (server.namespace.clone(), policy.name_any());
                let entry = memory
                    .entry(key)
                    .or_insert_with(|| PolicyMemory::new(policy));
                entry.step(policy, &server.name, samples, now)
            })
            .collect()
    };
    for change in changes {
        report(context, change).await;
    }
}

/// Whether a policy is evaluated: enabled, and its rules consistent (an inconsistent one says
/// why in its `Ready` condition instead of reporting bounds it cannot check).
fn evaluated(policy: &ThresholdPolicy) -> bool {
    policy.spec.enabled && policy.spec.problem().is_ok()
}

/// Drops the counters of the namespace's policies that no longer exist.
fn forget_deleted(
    memory: &mut HashMap<PolicyKey, PolicyMemory>,
    namespace: &str,
    policies: &[Arc<ThresholdPolicy>],
) {
    memory
        .retain(|(ns, name), _| ns != namespace || policies.iter().any(|p| p.name_any() == *name));
}

/// Writes the changed evaluation and its condition, then publishes the Event of a state
/// change; a failed write is retried on the next tick (the memory keeps the old state).
async fn report(context: &Context, change: Change) {
    let Change {
        policy,
        evaluation,
        previous,
    } = change;
    let api = Api::<ThresholdPolicy>::namespaced(
        context.client.clone(),
        &policy.namespace().unwrap_or_default(),
    );
    let fields = status_fields(&policy, &evaluation);
    match apply_fields_as_if_unchanged(&api, policy.as_ref(), FIELD_MANAGER, &fields).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(error) => {
            tracing::warn!(policy = %policy.name_any(), %error, "could not write the threshold evaluation");
            return;
        }
    }
    let key = (policy.namespace().unwrap_or_default(), policy.name_any());
    if let Some(memory) = MEMORY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(&key)
    {
        memory.written = Some(Summary::of(&evaluation));
    }
    let state = evaluation.state;
    if previous.unwrap_or_default() != state {
        let (type_, reason) = event_of(state);
        let note = event_note(&evaluation);
        context
            .publish_event(&policy.object_ref(&()), type_, reason, note)
            .await;
    }
}

/// `evaluation` and the conditions with `ThresholdCrossed` merged in.
fn status_fields(policy: &ThresholdPolicy, evaluation: &ThresholdEvaluation) -> Map<String, Value> {
    let mut conditions: Vec<Condition> = policy
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let (status, reason, message) = match evaluation.state {
        Severity::Ok => (
            ConditionStatus::False,
            WITHIN_BOUNDS,
            "no rule's boundary is crossed".to_string(),
        ),
        severity => (
            ConditionStatus::True,
            if severity == Severity::Critical {
                "Critical"
            } else {
                "Warning"
            },
            event_note(evaluation),
        ),
    };
    let crossed = Condition::new(
        THRESHOLD_CROSSED,
        status,
        reason,
        message,
        policy.meta().generation,
        evaluation.evaluated_at.0,
    );
    condition::merge(&mut conditions, crossed);
    let mut fields = Map::new();
    fields.insert("evaluation".into(), json!(evaluation));
    fields.insert("conditions".into(), json!(conditions));
    fields
}

fn event_of(state: Severity) -> (EventType, &'static str) {
    match state {
        Severity::Ok => (EventType::Normal, THRESHOLD_CLEARED),
        Severity::Warning => (EventType::Warning, THRESHOLD_WARNING),
        Severity::Critical => (EventType::Warning, THRESHOLD_CRITICAL),
    }
}

/// What is crossed, with observed values and boundaries; or that nothing is.
fn event_note(evaluation: &ThresholdEvaluation) -> String {
    if evaluation.crossed.is_empty() {
        return "every rule is back within its bounds".into();
    }
    let crossed: Vec<String> = evaluation
        .crossed
        .iter()
        .map(|c| {
            format!(
                "{} {}: observed {} crossed the {} boundary {} (rule {})",
                c.signal,
                c.metric,
                c.observed_value,
                c.severity.as_str(),
                c.boundary,
                c.rule_id
            )
        })
        .collect();
    format!("{}; non-enforcing, nothing was stopped", crossed.join("; "))
}
