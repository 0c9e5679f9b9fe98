use super::*;
use berth_crds::invitation::InvitationSpec;
use berth_crds::member::OrganizationRole;
use serde_json::{Value, json};

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

const NOW: &str = "2026-06-01T00:00:00Z";
const EARLIER: &str = "2026-05-01T00:00:00Z";

/// A `kind` of generation 2 created at `EARLIER`, with `spec` and `status`.
fn object<K: serde::de::DeserializeOwned>(kind: &str, spec: Value, status: Value) -> K {
    serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": kind,
        "metadata": {
            "name": "x-1", "namespace": "org-acme", "generation": 2,
            "creationTimestamp": EARLIER,
        },
        "spec": spec, "status": status,
    }))
    .unwrap()
}

/// What the controller applies: the owned fields as JSON, conditions left out.
fn applied<F: Serialize>(owned: Owned<F>) -> Value {
    let mut value = serde_json::to_value(owned).unwrap();
    value.as_object_mut().unwrap().remove("conditions");
    value
}

/// The `Ready` condition's status and reason.
fn ready_of<F>(owned: &Owned<F>) -> (Value, &str) {
    let ready = &owned.conditions[0];
    (json!(ready.status), ready.reason.as_str())
}

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
    let now = at(NOW);
    let state = |i: Invitation| i.owned_status(&[], now).fields.status;
    assert_eq!(
        state(invitation("2026-07-01T00:00:00Z", false)),
        InvitationState::Pending
    );
    assert_eq!(state(invitation(EARLIER, false)), InvitationState::Expired);
    assert_eq!(
        state(invitation("2026-07-01T00:00:00Z", true)),
        InvitationState::Revoked
    );
    let mut accepted = invitation(EARLIER, false);
    accepted.status = serde_json::from_value(json!({"acceptedAt": EARLIER})).ok();
    assert_eq!(state(accepted), InvitationState::Accepted);
}

#[test]
fn a_revoked_session_keeps_the_first_revocation_time() {
    let spec = json!({
        "userId": "usr-1", "clientKind": "cli", "tokenDigest": "a".repeat(64),
        "expiresAt": "2099-01-01T00:00:00Z", "revoked": true,
    });
    let fresh: Session = object("Session", spec.clone(), json!({}));
    let owned = fresh.owned_status(&[], at(NOW));
    assert_eq!(ready_of(&owned), (json!("False"), reason::REVOKED));
    assert_eq!(
        applied(owned),
        json!({ "observedGeneration": 2, "revokedAt": NOW })
    );
    let revoked: Session = object("Session", spec, json!({ "revokedAt": EARLIER }));
    let owned = revoked.owned_status(&[], at(NOW));
    assert_eq!(
        applied(owned),
        json!({ "observedGeneration": 2, "revokedAt": EARLIER })
    );
}

#[test]
fn a_deploy_token_owns_its_state_but_not_what_the_shim_records() {
    let spec = json!({
        "displayName": "ci", "secretDigest": "b".repeat(64), "secretSuffix": "abcd",
        "expiresAt": EARLIER,
    });
    let status = json!({ "lastUsedAt": EARLIER, "rotatedAt": EARLIER });
    let token: DeployToken = object("DeployToken", spec, status);
    let owned = token.owned_status(&[], at(NOW));
    assert_eq!(ready_of(&owned), (json!("False"), reason::EXPIRED));
    assert_eq!(
        applied(owned),
        json!({ "observedGeneration": 2, "status": "active" })
    );
}

#[test]
fn a_removed_member_keeps_when_it_joined() {
    let spec =
        json!({ "userId": "usr-1", "email": "a@b.example", "role": "member", "active": false });
    let member: Member = object("Member", spec, json!({}));
    let owned = member.owned_status(&[], at(NOW));
    assert_eq!(ready_of(&owned), (json!("False"), "Removed"));
    assert_eq!(
        applied(owned),
        json!({
            "observedGeneration": 2, "memberStatus": "removed",
            "joinedAt": EARLIER, "removedAt": NOW,
        })
    );
}

#[test]
fn a_decision_is_recorded_once_at_its_creation() {
    let spec = json!({ "operationKey": "deploy", "source": "console" });
    let decision: OverlayDecision = object("OverlayDecision", spec, json!({}));
    let owned = decision.owned_status(&[], at(NOW));
    assert_eq!(ready_of(&owned), (json!("True"), reason::RECONCILED));
    assert_eq!(
        applied(owned),
        json!({ "observedGeneration": 2, "decidedAt": EARLIER })
    );
}

fn policy(status: Value, annotations: Value) -> RetentionPolicy {
    let mut policy: RetentionPolicy = serde_json::from_value(json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "RetentionPolicy",
        "metadata": {
            "name": "process-attempts", "namespace": "berth-system", "generation": 2,
            "annotations": annotations,
            "managedFields": [{
                "manager": "kubectl-edit", "operation": "Update", "apiVersion": "berth.dev/v1alpha1",
                "time": EARLIER, "fieldsType": "FieldsV1", "fieldsV1": { "f:spec": {} },
            }],
        },
        "spec": { "category": "process-attempts", "retentionDays": 30 },
    }))
    .unwrap();
    policy.status = serde_json::from_value(status).unwrap();
    policy
}

#[test]
fn a_policy_names_who_changed_it_and_moves_its_time_with_the_generation() {
    let seen = json!({ "observedGeneration": 2, "updatedAt": EARLIER });
    let by_kubectl = policy(seen, json!({})).owned_status(&[], at(NOW));
    assert_eq!(
        applied(by_kubectl),
        json!({
            "observedGeneration": 2, "updatedAt": EARLIER,
            "updatedByActorKind": "user", "updatedByActorId": "kubectl-edit",
        })
    );
    let older = json!({ "observedGeneration": 1, "updatedAt": EARLIER });
    let annotations = json!({
        berth_crds::UPDATED_BY_KIND: "deploy-token", berth_crds::UPDATED_BY_ID: "dtk-1",
    });
    let by_token = policy(older, annotations).owned_status(&[], at(NOW));
    assert_eq!(
        applied(by_token),
        json!({
            "observedGeneration": 2, "updatedAt": NOW,
            "updatedByActorKind": "deploy-token", "updatedByActorId": "dtk-1",
        })
    );
}

/// A server's ThresholdPolicy whose one rule names `signal` / `metric`.
fn threshold_policy(signal: &str, metric: &str) -> ThresholdPolicy {
    let rule = json!({"ruleId": "r", "signal": signal, "metric": metric, "critical": 1.0});
    let spec = json!({"scope": {"kind": "server", "serverId": "edge"}, "rules": [rule]});
    object("ThresholdPolicy", spec, json!({}))
}

#[test]
fn a_threshold_policy_naming_a_former_metric_is_ready_and_says_what_it_reads() {
    let owned = threshold_policy("memory", "memoryUsedBytes").owned_status(&[], at(NOW));
    assert_eq!(ready_of(&owned), (json!("True"), reason::RECONCILED));
    let message = &owned.conditions[0].message;
    assert!(message.starts_with(POLICY_STORED), "{message}");
    assert!(
        message.contains("`memory` / `memoryUsedBytes`"),
        "{message}"
    );
    assert!(message.contains("`memory` / `usedBytes`"), "{message}");
    let current = threshold_policy("memory", "usedBytes").owned_status(&[], at(NOW));
    assert_eq!(current.conditions[0].message, POLICY_STORED);
    let unknown = threshold_policy("memory", "ramBytes").owned_status(&[], at(NOW));
    assert_eq!(ready_of(&unknown), (json!("False"), reason::INVALID_SPEC));
    let message = &unknown.conditions[0].message;
    assert!(message.contains("spec.rules[0].metric"), "{message}");
    assert!(message.contains("containerUsedBytes"), "{message}");
}
