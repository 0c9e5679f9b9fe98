//! What each bookkeeping kind owns in its status (see `bookkeeping`).

use berth_crds::condition::{Condition, reason};
use berth_crds::deploy_token::DeployToken;
use berth_crds::invitation::Invitation;
use berth_crds::member::Member;
use berth_crds::overlay_decision::OverlayDecision;
use berth_crds::retention_policy::RetentionPolicy;
use berth_crds::route_surface_decision::RouteSurfaceDecision;
use berth_crds::session::Session;
use berth_crds::storage_volume::StorageVolume;
use berth_crds::threshold_policy::ThresholdPolicy;
use berth_crds::threshold_policy::actor_kind;
use berth_crds::usage_intent::UsageIntent;
use berth_crds::user::User;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{Map, Value, json};

use super::bookkeeping::{Bookkept, base_status, namespaced_api, stamp_once, with_condition};
use crate::conditions::Stamp;

fn accepted<K: Resource>(
    object: &K,
    conditions: &[Condition],
    message: &str,
    now: Timestamp,
) -> Map<String, Value> {
    let ready = stamp(object, now).reconciled(message);
    base_status(object, with_condition(conditions, ready))
}

fn not_ready<K: Resource>(
    object: &K,
    conditions: &[Condition],
    why: &str,
    message: &str,
    now: Timestamp,
) -> Map<String, Value> {
    let ready = stamp(object, now).not_ready(why, message);
    base_status(object, with_condition(conditions, ready))
}

fn stamp<K: Resource>(object: &K, now: Timestamp) -> Stamp {
    Stamp {
        generation: object.meta().generation,
        now,
    }
}

/// The creation time, used as "recorded at" for write-once records.
fn created(object: &impl Resource) -> Value {
    json!(object.meta().creation_timestamp)
}

impl Bookkept for User {
    const KIND: &'static str = "User";
    fn api_for(&self, client: Client) -> Api<Self> {
        Api::all(client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        accepted(self, conditions, "user can sign in", now)
    }
}

impl Bookkept for Session {
    const KIND: &'static str = "Session";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        if self.spec.revoked {
            let mut status = not_ready(
                self,
                conditions,
                reason::REVOKED,
                "session was revoked",
                now,
            );
            status.insert(
                "revokedAt".into(),
                stamp_once(&self.status_json(), "revokedAt", now),
            );
            status
        } else if self.spec.expires_at.0 <= now {
            not_ready(self, conditions, reason::EXPIRED, "session expired", now)
        } else {
            accepted(self, conditions, "session is valid", now)
        }
    }
    fn next_change(&self) -> Option<Timestamp> {
        Some(self.spec.expires_at.0)
    }
}

impl Bookkept for Member {
    const KIND: &'static str = "Member";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        let current = self.status_json();
        let joined = current
            .get("joinedAt")
            .cloned()
            .unwrap_or_else(|| created(self));
        if self.spec.active {
            let mut status = accepted(self, conditions, "member of the organization", now);
            status.insert("memberStatus".into(), json!("active"));
            status.insert("joinedAt".into(), joined);
            status
        } else {
            let mut status = not_ready(
                self,
                conditions,
                "Removed",
                "removed from the organization",
                now,
            );
            status.insert("memberStatus".into(), json!("removed"));
            status.insert("joinedAt".into(), joined);
            status.insert("removedAt".into(), stamp_once(&current, "removedAt", now));
            status
        }
    }
}

impl Bookkept for Invitation {
    const KIND: &'static str = "Invitation";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        let current = self.status_json();
        // `acceptedAt` is the shim's proof of acceptance; a write from an older copy of the
        // object must not turn an accepted invitation back into a pending one.
        let already_accepted = current.get("status") == Some(&json!("accepted"))
            || current.get("acceptedAt").is_some_and(|at| at.is_string());
        let (state, mut status) = if self.spec.revoked {
            (
                "revoked",
                not_ready(
                    self,
                    conditions,
                    reason::REVOKED,
                    "invitation was revoked",
                    now,
                ),
            )
        } else if already_accepted {
            (
                "accepted",
                accepted(self, conditions, "invitation was accepted", now),
            )
        } else if self.spec.expires_at.0 <= now {
            (
                "expired",
                not_ready(self, conditions, reason::EXPIRED, "invitation expired", now),
            )
        } else {
            (
                "pending",
                accepted(self, conditions, "waiting for the invited person", now),
            )
        };
        status.insert("status".into(), json!(state));
        status
    }
    fn next_change(&self) -> Option<Timestamp> {
        Some(self.spec.expires_at.0)
    }
}

impl Bookkept for DeployToken {
    const KIND: &'static str = "DeployToken";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        let expired = self.spec.expires_at.as_ref().is_some_and(|at| at.0 <= now);
        let mut status = if self.spec.revoked {
            let mut status = not_ready(self, conditions, reason::REVOKED, "token was revoked", now);
            status.insert(
                "revokedAt".into(),
                stamp_once(&self.status_json(), "revokedAt", now),
            );
            status
        } else if expired {
            not_ready(self, conditions, reason::EXPIRED, "token expired", now)
        } else {
            accepted(self, conditions, "token is accepted within its scope", now)
        };
        status.insert(
            "status".into(),
            json!(if self.spec.revoked {
                "revoked"
            } else {
                "active"
            }),
        );
        status
    }
    fn next_change(&self) -> Option<Timestamp> {
        self.spec.expires_at.as_ref().map(|at| at.0)
    }
}

/// Write-once records: `Ready` plus a timestamp field that keeps its first value (creation time).
fn recorded_once<K: Resource + Bookkept>(
    object: &K,
    conditions: &[Condition],
    message: &str,
    field: &str,
    now: Timestamp,
) -> Map<String, Value> {
    let mut status = accepted(object, conditions, message, now);
    let recorded = object
        .status_json()
        .get(field)
        .cloned()
        .unwrap_or_else(|| created(object));
    status.insert(field.into(), recorded);
    status
}

impl Bookkept for UsageIntent {
    const KIND: &'static str = "UsageIntent";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        recorded_once(self, conditions, "usage intent recorded", "recordedAt", now)
    }
}

impl Bookkept for OverlayDecision {
    const KIND: &'static str = "OverlayDecision";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        recorded_once(self, conditions, "decision recorded", "decidedAt", now)
    }
}

impl Bookkept for RouteSurfaceDecision {
    const KIND: &'static str = "RouteSurfaceDecision";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        recorded_once(self, conditions, "decision recorded", "decidedAt", now)
    }
}

impl Bookkept for StorageVolume {
    const KIND: &'static str = "StorageVolume";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    /// The `sourcePath` rule the schema cannot express is checked here, so a volume applied
    /// with kubectl that breaks it says so before an attempt refuses to mount it.
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        match self.spec.problem() {
            None => accepted(self, conditions, "volume can be attached and mounted", now),
            Some(problem) => not_ready(self, conditions, reason::INVALID_SPEC, &problem, now),
        }
    }
}

/// `Ready=True` of a policy whose spec is consistent.
const POLICY_STORED: &str = "policy stored; it is non-enforcing";

/// `status` (its `Ready`) with who changed the policy last: the REST shim's actor annotations,
/// or the field manager (`kubectl`, a GitOps tool) that last wrote the spec, a `user` (or
/// `system` for Berth's own).
fn policy_status<K: Resource>(
    object: &K,
    mut status: Map<String, Value>,
    status_json: &Value,
    now: Timestamp,
) -> Map<String, Value> {
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
    let same_generation =
        status_json.get("observedGeneration") == Some(&json!(object.meta().generation));
    let updated_at = if same_generation {
        stamp_once(status_json, "updatedAt", now)
    } else {
        json!(Time(now))
    };
    status.insert("updatedAt".into(), updated_at);
    status.insert("updatedByActorKind".into(), json!(kind));
    status.insert("updatedByActorId".into(), json!(id));
    status
}

/// The field manager of the most recent spec write, from `managedFields`.
fn last_spec_manager<K: Resource>(object: &K) -> Option<String> {
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
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        let stored = match self.spec.problem() {
            Ok(()) => accepted(self, conditions, POLICY_STORED, now),
            Err(problem) => not_ready(
                self,
                conditions,
                reason::INVALID_SPEC,
                &problem.message,
                now,
            ),
        };
        policy_status(self, stored, &self.status_json(), now)
    }
}

impl Bookkept for RetentionPolicy {
    const KIND: &'static str = "RetentionPolicy";
    fn api_for(&self, client: Client) -> Api<Self> {
        namespaced_api(self, client)
    }
    fn owned_status(&self, conditions: &[Condition], now: Timestamp) -> Map<String, Value> {
        let stored = accepted(self, conditions, POLICY_STORED, now);
        policy_status(self, stored, &self.status_json(), now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::invitation::InvitationSpec;
    use berth_crds::member::OrganizationRole;

    fn invitation(expires_at: &str, revoked: bool) -> Invitation {
        Invitation::new(
            "inv-1",
            InvitationSpec {
                email: "a@b.example".into(),
                role: OrganizationRole::Member,
                inviter_user_id: "usr-1".into(),
                expires_at: Time(expires_at.parse().unwrap()),
                revoked,
            },
        )
    }

    #[test]
    fn invitation_states_follow_revocation_acceptance_and_expiry() {
        let now: Timestamp = "2026-06-01T00:00:00Z".parse().unwrap();
        let pending = invitation("2026-07-01T00:00:00Z", false).owned_status(&[], now);
        assert_eq!(pending["status"], "pending");
        let expired = invitation("2026-05-01T00:00:00Z", false).owned_status(&[], now);
        assert_eq!(expired["status"], "expired");
        let revoked = invitation("2026-07-01T00:00:00Z", true).owned_status(&[], now);
        assert_eq!(revoked["status"], "revoked");
        let mut accepted = invitation("2026-05-01T00:00:00Z", false);
        accepted.status = serde_json::from_value(json!({"status": "accepted"})).ok();
        assert_eq!(accepted.owned_status(&[], now)["status"], "accepted");
    }
}
