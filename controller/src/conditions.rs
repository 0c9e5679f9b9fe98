//! The conditions the controller sets (the reconcilers, and the observer on ThresholdPolicies),
//! one named constructor each, so a call says which condition it means rather than spelling
//! type, status and reason positionally.
//!
//! Every constructor is a method of [`Stamp`]: the generation and time one reconcile observed,
//! which every condition it sets carries (a parameter, so status planning stays pure).

use berth_crds::condition::{
    ARCHIVED, Condition, ConditionStatus, DELETION_BLOCKED, READY, reason,
};
use k8s_openapi::jiff::Timestamp;

/// The generation and time every condition of one reconcile carries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stamp {
    pub generation: Option<i64>,
    pub now: Timestamp,
}

impl Stamp {
    /// `type_` holds (`True`): for a kind's own condition types.
    pub fn holds(&self, type_: &str, reason: &str, message: impl Into<String>) -> Condition {
        self.condition(type_, ConditionStatus::True, reason, message)
    }

    /// `type_` does not hold (`False`): for a kind's own condition types.
    pub fn fails(&self, type_: &str, reason: &str, message: impl Into<String>) -> Condition {
        self.condition(type_, ConditionStatus::False, reason, message)
    }

    /// `type_` holds or not as `holds` says: for verdicts computed before the condition.
    pub fn judged(
        &self,
        type_: &str,
        holds: bool,
        reason: &str,
        message: impl Into<String>,
    ) -> Condition {
        if holds {
            self.holds(type_, reason, message)
        } else {
            self.fails(type_, reason, message)
        }
    }

    /// `type_` could not be checked (`Unknown`).
    pub fn unknown(&self, type_: &str, reason: &str, message: impl Into<String>) -> Condition {
        self.condition(type_, ConditionStatus::Unknown, reason, message)
    }

    /// `Ready=True`.
    pub fn ready(&self, reason: &str, message: impl Into<String>) -> Condition {
        self.holds(READY, reason, message)
    }

    /// `Ready=False`.
    pub fn not_ready(&self, reason: &str, message: impl Into<String>) -> Condition {
        self.fails(READY, reason, message)
    }

    /// `Ready=True` because the object is reconciled (nothing kind-specific to say).
    pub fn reconciled(&self, message: impl Into<String>) -> Condition {
        self.ready(reason::RECONCILED, message)
    }

    /// `Archived=True`, `message` saying why.
    pub fn archived(&self, message: impl Into<String>) -> Condition {
        self.holds(ARCHIVED, reason::ARCHIVED, message)
    }

    /// `Archived=False`: the object is in use.
    pub fn active(&self) -> Condition {
        self.fails(ARCHIVED, reason::ACTIVE, "in use")
    }

    /// `DeletionBlocked=True`: other objects, named in `message`, still use this one.
    pub fn deletion_blocked(&self, message: impl Into<String>) -> Condition {
        self.holds(DELETION_BLOCKED, reason::IN_USE, message)
    }

    /// `DeletionBlocked=False`: nothing holds a requested deletion back.
    pub fn deletion_unblocked(&self, message: impl Into<String>) -> Condition {
        self.fails(DELETION_BLOCKED, reason::RECONCILED, message)
    }

    fn condition(
        &self,
        type_: &str,
        status: ConditionStatus,
        reason: &str,
        message: impl Into<String>,
    ) -> Condition {
        Condition::new(type_, status, reason, message, self.generation, self.now)
    }
}

/// What tests of named constructors (here and in the kinds' modules) compare against.
#[cfg(test)]
pub mod testing {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    pub fn stamp() -> Stamp {
        Stamp {
            generation: Some(7),
            now: "2024-05-01T10:00:00Z".parse().unwrap(),
        }
    }

    /// The condition a constructor called on [`stamp`] should produce, field by field.
    pub fn expected(
        type_: &str,
        status: ConditionStatus,
        reason: &str,
        message: &str,
    ) -> Condition {
        Condition {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: message.to_string(),
            last_transition_time: Time(stamp().now),
            observed_generation: Some(7),
        }
    }

    /// A condition's type, status, reason and message.
    pub type Fields<'a> = (&'a str, ConditionStatus, &'a str, &'a str);

    /// Each built condition is the `expected` one of its fields.
    pub fn assert_builds(cases: &[(Condition, Fields<'_>)]) {
        for (built, (type_, status, reason, message)) in cases {
            assert_eq!(*built, expected(type_, *status, reason, message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{assert_builds, stamp};
    use super::*;
    use ConditionStatus::{False, True, Unknown};

    #[test]
    fn kind_conditions_carry_type_status_and_stamp() {
        let s = stamp();
        assert_builds(&[
            (s.holds("Issued", "Why", "m"), ("Issued", True, "Why", "m")),
            (s.fails("Issued", "Why", "m"), ("Issued", False, "Why", "m")),
            (s.unknown("X", "Why", "m"), ("X", Unknown, "Why", "m")),
            (s.judged("X", true, "Why", "m"), ("X", True, "Why", "m")),
            (s.judged("X", false, "Why", "m"), ("X", False, "Why", "m")),
        ]);
    }

    #[test]
    fn ready_archived_and_deletion_conditions() {
        let s = stamp();
        let used = "used by a";
        assert_builds(&[
            (s.ready("Serving", "m"), ("Ready", True, "Serving", "m")),
            (s.not_ready("Gone", "m"), ("Ready", False, "Gone", "m")),
            (s.reconciled("m"), ("Ready", True, "Reconciled", "m")),
            (s.archived("old"), ("Archived", True, "Archived", "old")),
            (s.active(), ("Archived", False, "Active", "in use")),
        ]);
        let blocked = ("DeletionBlocked", True, "InUse", used);
        let free = ("DeletionBlocked", False, "Reconciled", "free");
        assert_builds(&[(s.deletion_blocked(used), blocked)]);
        assert_builds(&[(s.deletion_unblocked("free"), free)]);
    }
}
