//! Runtime-monitoring thresholds (spec §4.5): on every monitoring tick, the server's samples
//! are held against the enabled ThresholdPolicies of its namespace whose scope they match. It
//! costs no I/O per tick: consecutive-breach counters live in memory, and only when a policy's
//! evaluated state changes is its status (`evaluation`, `ThresholdCrossed`) written and a
//! Kubernetes Event published, so existing Kubernetes alerting sees it (and a
//! `threshold-crossed` notification when it starts warning or turns critical). Non-enforcing:
//! nothing is ever stopped or throttled.

mod evaluation;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use berth_crds::condition::{self, Condition};
use berth_crds::monitoring::MonitoringSample;
use berth_crds::notification::NotificationEvent;
use berth_crds::threshold_policy::{
    Severity, THRESHOLD_CROSSED, ThresholdEvaluation, ThresholdPolicy, WITHIN_BOUNDS,
};
use berth_remote::ServerId;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;
use kube::{Api, Resource, ResourceExt};
use serde_json::{Map, Value, json};

use self::evaluation::{Change, PolicyMemory, Summary, covers};
use crate::conditions::Stamp;
use crate::context::Context;
use crate::notices::{Notice, subject};
use crate::status::StatusWriter;

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
    match StatusWriter::new(&api, policy.as_ref())
        .as_manager(FIELD_MANAGER)
        .if_unchanged()
        .apply_fields(&fields)
        .await
    {
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
        if state != Severity::Ok {
            context.notices.send(crossed_notice(&policy, note.clone()));
        }
        context
            .publish_event(&policy.object_ref(&()), type_, reason, note)
            .await;
    }
}

/// What the notifier is told when `policy` starts warning or turns critical.
fn crossed_notice(policy: &ThresholdPolicy, summary: String) -> Notice {
    let scope = &policy.spec.scope;
    Notice {
        namespace: policy.namespace().unwrap_or_default(),
        event: NotificationEvent::ThresholdCrossed,
        subject: subject("ThresholdPolicy", &policy.name_any(), None),
        project_id: scope.project_id.clone(),
        resource_id: scope.resource_id.clone(),
        summary,
        occurred_at: Timestamp::now(),
    }
}

/// `evaluation` and the conditions with `ThresholdCrossed` merged in.
fn status_fields(policy: &ThresholdPolicy, evaluation: &ThresholdEvaluation) -> Map<String, Value> {
    let mut conditions: Vec<Condition> = policy
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let stamp = Stamp {
        generation: policy.meta().generation,
        now: evaluation.evaluated_at.0,
    };
    let crossed = match evaluation.state {
        Severity::Ok => stamp.within_bounds(),
        severity => stamp.threshold_crossed(severity, event_note(evaluation)),
    };
    condition::merge(&mut conditions, crossed);
    let mut fields = Map::new();
    fields.insert("evaluation".into(), json!(evaluation));
    fields.insert("conditions".into(), json!(conditions));
    fields
}

/// The `ThresholdCrossed` condition, by name.
impl Stamp {
    /// `ThresholdCrossed=False`: every rule is within its bounds.
    fn within_bounds(&self) -> Condition {
        let message = "no rule's boundary is crossed";
        self.fails(THRESHOLD_CROSSED, WITHIN_BOUNDS, message)
    }

    /// `ThresholdCrossed=True` at `severity` (`Warning` or `Critical`), `message` saying what.
    fn threshold_crossed(&self, severity: Severity, message: String) -> Condition {
        let reason = if severity == Severity::Critical {
            "Critical"
        } else {
            "Warning"
        };
        self.holds(THRESHOLD_CROSSED, reason, message)
    }
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

#[cfg(test)]
mod condition_tests {
    use super::*;
    use crate::conditions::testing::{expected, stamp};
    use berth_crds::condition::ConditionStatus::{False, True};

    #[test]
    fn threshold_crossed_by_name() {
        let within = "no rule's boundary is crossed";
        let ok = expected("ThresholdCrossed", False, "WithinBounds", within);
        assert_eq!(stamp().within_bounds(), ok);
        let warning = expected("ThresholdCrossed", True, "Warning", "m");
        assert_eq!(
            stamp().threshold_crossed(Severity::Warning, "m".into()),
            warning
        );
        let critical = expected("ThresholdCrossed", True, "Critical", "m");
        assert_eq!(
            stamp().threshold_crossed(Severity::Critical, "m".into()),
            critical
        );
    }
}
