//! kstatus-style conditions shared by every kind, and the pure merge that keeps
//! `lastTransitionTime` still unless the status really changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use berth_vocabulary::conditions::ConditionRecord;
/// Status of a condition, as Kubernetes spells it: a wire type too, defined in
/// `berth-vocabulary`.
pub use berth_vocabulary::conditions::ConditionStatus;

/// Condition type every kind reports; `kubectl wait --for=condition=Ready` reads it.
pub const READY: &str = "Ready";

/// Condition type of projects and environments: whether the object is archived.
pub const ARCHIVED: &str = "Archived";
/// Condition type present while a requested deletion waits for users of the object to go.
pub const DELETION_BLOCKED: &str = "DeletionBlocked";

/// Reasons used across kinds. Kind-specific reasons live in the kind's module (`reason`).
pub mod reason {
    pub const RECONCILED: &str = "Reconciled";
    pub const ARCHIVED: &str = "Archived";
    /// `Archived=False`: the object is in use.
    pub const ACTIVE: &str = "Active";
    pub const INVALID_SPEC: &str = "InvalidSpec";
    pub const DEPENDENCY_MISSING: &str = "DependencyMissing";
    /// `DeletionBlocked=True`: other objects still use this one.
    pub const IN_USE: &str = "InUse";
    /// `Ready=False` of a session, token or invitation once its time limit passed.
    pub const EXPIRED: &str = "Expired";
    /// `Ready=False` of a session, token or invitation after revocation.
    pub const REVOKED: &str = "Revoked";
}

/// One observation about an object, in the shape kstatus and Flux understand.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type in CamelCase, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether the condition holds: `True`, `False` or `Unknown`.
    pub status: ConditionStatus,
    /// Machine-readable reason in CamelCase.
    pub reason: String,
    /// Human-readable explanation.
    pub message: String,
    /// When `status` last changed.
    pub last_transition_time: Time,
    /// The `metadata.generation` this condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A time as Kubernetes writes it (RFC 3339, whole seconds): how the REST API shows the times
/// the controller writes.
pub fn wire_time(time: &Time) -> String {
    time.0.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl From<&Condition> for ConditionRecord {
    fn from(condition: &Condition) -> Self {
        Self {
            type_: condition.type_.clone(),
            status: condition.status,
            reason: condition.reason.clone(),
            message: condition.message.clone(),
            last_transition_time: wire_time(&condition.last_transition_time),
            observed_generation: condition.observed_generation,
        }
    }
}

impl Condition {
    /// A condition observed at `now` (a parameter, so status planning stays pure and testable).
    pub fn new(
        type_: &str,
        status: ConditionStatus,
        reason: &str,
        message: impl Into<String>,
        observed_generation: Option<i64>,
        now: Timestamp,
    ) -> Self {
        Self {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: message.into(),
            last_transition_time: Time(now),
            observed_generation,
        }
    }

    /// Same observation, ignoring when it was made.
    fn same_observation(&self, other: &Condition) -> bool {
        self.status == other.status
            && self.reason == other.reason
            && self.message == other.message
            && self.observed_generation == other.observed_generation
    }
}

/// Merges `new` into `conditions`: `lastTransitionTime` only moves when `status` changes, and
/// nothing changes at all when the observation is the same. Returns whether anything changed.
pub fn merge(conditions: &mut Vec<Condition>, mut new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) if existing.same_observation(&new) => false,
        Some(existing) => {
            if existing.status == new.status {
                new.last_transition_time = existing.last_transition_time.clone();
            }
            *existing = new;
            true
        }
        None => {
            conditions.push(new);
            true
        }
    }
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(status: ConditionStatus, message: &str) -> Condition {
        Condition::new(
            READY,
            status,
            reason::RECONCILED,
            message,
            Some(1),
            Timestamp::now(),
        )
    }

    /// The REST API shows a condition exactly as the object's status holds it.
    #[test]
    fn the_wire_condition_is_the_stored_one() {
        let mut condition = ready(ConditionStatus::False, "down");
        condition.last_transition_time = Time("2030-01-02T03:04:05.678Z".parse().unwrap());
        let wire = ConditionRecord::from(&condition);
        assert_eq!(wire.last_transition_time, "2030-01-02T03:04:05Z");
        assert_eq!(
            serde_json::to_value(&wire).unwrap(),
            serde_json::to_value(&condition).unwrap()
        );
    }

    #[test]
    fn same_observation_changes_nothing() {
        let mut conditions = vec![ready(ConditionStatus::True, "ok")];
        let before = conditions.clone();
        assert!(!merge(&mut conditions, ready(ConditionStatus::True, "ok")));
        assert_eq!(conditions, before);
    }

    #[test]
    fn message_change_keeps_transition_time() {
        let mut conditions = vec![ready(ConditionStatus::True, "ok")];
        let mut older = conditions[0].clone();
        older.last_transition_time = Time("2020-01-01T00:00:00Z".parse().unwrap());
        conditions[0] = older.clone();
        assert!(merge(
            &mut conditions,
            ready(ConditionStatus::True, "still ok")
        ));
        assert_eq!(
            conditions[0].last_transition_time,
            older.last_transition_time
        );
        assert_eq!(conditions[0].message, "still ok");
    }

    #[test]
    fn status_change_moves_transition_time() {
        let mut conditions = vec![ready(ConditionStatus::True, "ok")];
        conditions[0].last_transition_time = Time("2020-01-01T00:00:00Z".parse().unwrap());
        assert!(merge(
            &mut conditions,
            ready(ConditionStatus::False, "down")
        ));
        assert_ne!(
            conditions[0].last_transition_time,
            Time("2020-01-01T00:00:00Z".parse().unwrap())
        );
        assert!(!is_true(&conditions, READY));
    }
}
