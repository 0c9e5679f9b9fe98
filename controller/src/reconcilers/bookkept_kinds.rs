//! What each bookkeeping kind owns in its status (see `bookkeeping`): the standard
//! `observedGeneration` and `conditions`, and the typed fields of each kind's own.

use berth_crds::common::PolicyChange;
use berth_crds::condition::{Condition, reason};
use berth_crds::deploy_token::{DeployToken, DeployTokenState};
use berth_crds::invitation::{Invitation, InvitationState};
use berth_crds::member::Member;
use berth_crds::overlay_decision::OverlayDecision;
use berth_crds::preview::PreviewPolicy;
use berth_crds::retention_policy::RetentionPolicy;
use berth_crds::route_surface_decision::RouteSurfaceDecision;
use berth_crds::session::Session;
use berth_crds::threshold_policy::ThresholdPolicy;
use berth_crds::threshold_policy::actor_kind;
use berth_crds::usage_intent::UsageIntent;
use berth_crds::user::User;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;

use super::bookkeeping::{Bookkept, Owned, namespaced_api, with_condition};
use crate::conditions::Stamp;

/// `Ready=True` with `message`.
fn accepted(object: &impl Resource, message: &str, now: Timestamp) -> Condition {
    stamp(object, now).reconciled(message)
}

/// `Ready=False` for the reason `why`.
fn not_ready(object: &impl Resource, why: &str, message: &str, now: Timestamp) -> Condition {
    stamp(object, now).not_ready(why, message)
}

fn stamp(object: &impl Resource, now: Timestamp) -> Stamp {
    Stamp {
        generation: object.meta().generation,
        now,
    }
}

/// The owned status: `ready` merged into the current `conditions`, and the kind's `fields`.
fn owned<F>(
    object: &impl Resource,
    conditions: &[Condition],
    ready: Condition,
    fields: F,
) -> Owned<F> {
    Owned {
        observed_generation: object.meta().generation,
        conditions: with_condition(conditions, ready),
        fields,
    }
}

/// A time kept once set: `current`, or `now`.
fn kept_or_now(current: Option<&Time>, now: Timestamp) -> Time {
    current.cloned().unwrap_or(Time(now))
}

/// The first value of a write-once time: `current`, or the object's creation.
fn first(current: Option<&Time>, object: &impl Resource) -> Option<Time> {
    current
        .or(object.meta().creation_timestamp.as_ref())
        .cloned()
}

/// A kind that owns nothing beyond `observedGeneration` and `conditions`.
#[derive(Serialize, Debug, PartialEq)]
pub struct NoFields {}

impl Bookkept for User {
    const KIND: &'static str = "User";
    type Fields = NoFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        Api::all(client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<NoFields> {
        let ready = accepted(self, "user can sign in", now);
        owned(self, conditions, ready, NoFields {})
    }
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_at: Option<Time>,
}

impl Bookkept for Session {
    const KIND: &'static str = "Session";
    type Fields = SessionFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<SessionFields> {
        let current = self.status.as_ref();
        let (ready, revoked_at) = if self.spec.revoked {
            let at = kept_or_now(current.and_then(|s| s.revoked_at.as_ref()), now);
            let ready = not_ready(self, reason::REVOKED, "session was revoked", now);
            (ready, Some(at))
        } else if self.spec.expires_at.0 <= now {
            (
                not_ready(self, reason::EXPIRED, "session expired", now),
                None,
            )
        } else {
            (accepted(self, "session is valid", now), None)
        };
        owned(self, conditions, ready, SessionFields { revoked_at })
    }
    fn next_change(&self) -> Option<Timestamp> {
        Some(self.spec.expires_at.0)
    }
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemberFields {
    member_status: &'static str,
    joined_at: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    removed_at: Option<Time>,
}

impl Bookkept for Member {
    const KIND: &'static str = "Member";
    type Fields = MemberFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<MemberFields> {
        let current = self.status.as_ref();
        let joined_at = first(current.and_then(|s| s.joined_at.as_ref()), self);
        let (ready, fields) = if self.spec.active {
            let ready = accepted(self, "member of the organization", now);
            let fields = MemberFields {
                member_status: "active",
                joined_at,
                removed_at: None,
            };
            (ready, fields)
        } else {
            let ready = not_ready(self, "Removed", "removed from the organization", now);
            let removed_at = kept_or_now(current.and_then(|s| s.removed_at.as_ref()), now);
            let fields = MemberFields {
                member_status: "removed",
                joined_at,
                removed_at: Some(removed_at),
            };
            (ready, fields)
        };
        owned(self, conditions, ready, fields)
    }
}

#[derive(Serialize, Debug, PartialEq)]
pub struct InvitationFields {
    status: InvitationState,
}

impl Bookkept for Invitation {
    const KIND: &'static str = "Invitation";
    type Fields = InvitationFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<InvitationFields> {
        // `acceptedAt` is the shim's proof of acceptance; a write from an older copy of the
        // object must not turn an accepted invitation back into a pending one.
        let already_accepted = self.status.as_ref().is_some_and(|s| {
            s.status == Some(InvitationState::Accepted) || s.accepted_at.is_some()
        });
        let (status, ready) = if self.spec.revoked {
            let ready = not_ready(self, reason::REVOKED, "invitation was revoked", now);
            (InvitationState::Revoked, ready)
        } else if already_accepted {
            let ready = accepted(self, "invitation was accepted", now);
            (InvitationState::Accepted, ready)
        } else if self.spec.expires_at.0 <= now {
            let ready = not_ready(self, reason::EXPIRED, "invitation expired", now);
            (InvitationState::Expired, ready)
        } else {
            let ready = accepted(self, "waiting for the invited person", now);
            (InvitationState::Pending, ready)
        };
        owned(self, conditions, ready, InvitationFields { status })
    }
    fn next_change(&self) -> Option<Timestamp> {
        Some(self.spec.expires_at.0)
    }
}

#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeployTokenFields {
    status: DeployTokenState,
    #[serde(skip_serializing_if = "Option::is_none")]
    revoked_at: Option<Time>,
}

impl Bookkept for DeployToken {
    const KIND: &'static str = "DeployToken";
    type Fields = DeployTokenFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<DeployTokenFields> {
        let expired = self.spec.expires_at.as_ref().is_some_and(|at| at.0 <= now);
        let (ready, fields) = if self.spec.revoked {
            let current = self.status.as_ref().and_then(|s| s.revoked_at.as_ref());
            let fields = DeployTokenFields {
                status: DeployTokenState::Revoked,
                revoked_at: Some(kept_or_now(current, now)),
            };
            let ready = not_ready(self, reason::REVOKED, "token was revoked", now);
            (ready, fields)
        } else {
            let ready = match expired {
                true => not_ready(self, reason::EXPIRED, "token expired", now),
                false => accepted(self, "token is accepted within its scope", now),
            };
            let fields = DeployTokenFields {
                status: DeployTokenState::Active,
                revoked_at: None,
            };
            (ready, fields)
        };
        owned(self, conditions, ready, fields)
    }
    fn next_change(&self) -> Option<Timestamp> {
        self.spec.expires_at.as_ref().map(|at| at.0)
    }
}

/// A usage intent's write-once `recordedAt` (its creation time).
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RecordedAt {
    recorded_at: Option<Time>,
}

impl Bookkept for UsageIntent {
    const KIND: &'static str = "UsageIntent";
    type Fields = RecordedAt;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<RecordedAt> {
        let current = self.status.as_ref().and_then(|s| s.recorded_at.as_ref());
        let fields = RecordedAt {
            recorded_at: first(current, self),
        };
        owned(
            self,
            conditions,
            accepted(self, "usage intent recorded", now),
            fields,
        )
    }
}

/// A decision's write-once `decidedAt` (its creation time).
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DecidedAt {
    decided_at: Option<Time>,
}

/// The owned status of a recorded decision (overlay or route surface).
fn decision(
    object: &impl Resource,
    current: Option<&Time>,
    conditions: &[Condition],
    now: Timestamp,
) -> Owned<DecidedAt> {
    let fields = DecidedAt {
        decided_at: first(current, object),
    };
    owned(
        object,
        conditions,
        accepted(object, "decision recorded", now),
        fields,
    )
}

impl Bookkept for OverlayDecision {
    const KIND: &'static str = "OverlayDecision";
    type Fields = DecidedAt;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<DecidedAt> {
        let current = self.status.as_ref().and_then(|s| s.decided_at.as_ref());
        decision(self, current, conditions, now)
    }
}

impl Bookkept for RouteSurfaceDecision {
    const KIND: &'static str = "RouteSurfaceDecision";
    type Fields = DecidedAt;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<DecidedAt> {
        let current = self.status.as_ref().and_then(|s| s.decided_at.as_ref());
        decision(self, current, conditions, now)
    }
}

/// `Ready=True` of a policy whose spec is consistent.
/// Ready message of a preview policy: the preview controller and the webhook read it.
const PREVIEW_POLICY_APPLIES: &str = "applies to the next pull-request events";
const POLICY_STORED: &str = "policy stored; it is non-enforcing";

/// Who changed a policy last, and when: the REST shim's actor annotations, or the field
/// manager (`kubectl`, a GitOps tool) that last wrote the spec, a `user` (or `system` for
/// Berth's own).
#[derive(Serialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PolicyFields {
    updated_at: Time,
    updated_by_actor_kind: String,
    updated_by_actor_id: String,
}

fn policy_fields(
    object: &impl Resource,
    current: Option<&PolicyChange>,
    now: Timestamp,
) -> PolicyFields {
    let annotations = object.annotations();
    let (kind, id) = match (
        annotations.get(berth_crds::UPDATED_BY_KIND),
        annotations.get(berth_crds::UPDATED_BY_ID),
    ) {
        (Some(kind), Some(id)) => (kind.clone(), id.clone()),
        _ => {
            let manager = last_spec_manager(object).unwrap_or_else(|| "unknown".into());
            (actor_kind("", &manager).to_string(), manager)
        }
    };
    // `updatedAt` moves when the spec's generation does.
    let observed = current.and_then(|c| c.observed_generation);
    let updated_at = match observed.is_some() && observed == object.meta().generation {
        true => kept_or_now(current.and_then(|c| c.updated_at.as_ref()), now),
        false => Time(now),
    };
    PolicyFields {
        updated_at,
        updated_by_actor_kind: kind,
        updated_by_actor_id: id,
    }
}

/// The field manager of the most recent spec write, from `managedFields`.
fn last_spec_manager(object: &impl Resource) -> Option<String> {
    object
        .meta()
        .managed_fields
        .as_ref()?
        .iter()
        .filter(|entry| entry.subresource.as_deref().unwrap_or_default().is_empty())
        .filter(|entry| {
            entry
                .fields_v1
                .as_ref()
                .is_some_and(|fields| fields.0.get("f:spec").is_some())
        })
        .max_by_key(|entry| entry.time.as_ref().map(|t| t.0))
        .and_then(|entry| entry.manager.clone())
}

impl Bookkept for ThresholdPolicy {
    const KIND: &'static str = "ThresholdPolicy";
    type Fields = PolicyFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<PolicyFields> {
        let ready = match (self.spec.problem(), self.spec.renamed_note()) {
            (Ok(()), None) => accepted(self, POLICY_STORED, now),
            // Former metric names are read as current ones: `Ready` says which, so the
            // author can update the YAML (the object is not rewritten).
            (Ok(()), Some(note)) => accepted(self, &format!("{POLICY_STORED}; {note}"), now),
            (Err(problem), _) => not_ready(self, reason::INVALID_SPEC, &problem.message, now),
        };
        let current = self.status.as_ref().map(|s| &s.change);
        owned(self, conditions, ready, policy_fields(self, current, now))
    }
}

impl Bookkept for RetentionPolicy {
    const KIND: &'static str = "RetentionPolicy";
    type Fields = PolicyFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<PolicyFields> {
        let current = self.status.as_ref().map(|s| &s.change);
        let fields = policy_fields(self, current, now);
        owned(self, conditions, accepted(self, POLICY_STORED, now), fields)
    }
}

impl Bookkept for PreviewPolicy {
    const KIND: &'static str = "PreviewPolicy";
    type Fields = PolicyFields;
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Owned<PolicyFields> {
        let ready = accepted(self, PREVIEW_POLICY_APPLIES, now);
        let current = self.status.as_ref().map(|s| &s.change);
        owned(self, conditions, ready, policy_fields(self, current, now))
    }
}

#[cfg(test)]
mod tests;
