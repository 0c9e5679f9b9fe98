//! Shapes several kinds share (spec §2.1): actor, quantity, resource references, source
//! descriptor, digests, arbitrary JSON maps, decision context and policy change.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use berth_vocabulary::decisions::{Actor, DecisionContext, JsonMap, Quantity, ResourceRefs};

use crate::limits::{SOURCE_DISPLAY_NAME_MAX, SOURCE_KIND_MAX, SOURCE_KIND_PATTERN, TEXT_MAX};

/// Pattern of every SHA-256 digest Berth stores instead of a secret: `sha256:` and 64 hex digits.
pub const SHA256_DIGEST_PATTERN: &str = r"^sha256:[0-9a-f]{64}$";

/// Where a resource's code or artifact comes from (spec §2.2 "Resource source input").
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceDescriptor {
    /// Source kind, e.g. `local-folder`, `docker-image`, `git`, `static-directory`.
    #[schemars(length(min = 1, max = SOURCE_KIND_MAX), regex(pattern = SOURCE_KIND_PATTERN))]
    pub kind: String,
    /// Where the source is: a path, an image reference or a repository URL.
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub locator: String,
    /// Name shown for the source in the console and CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = SOURCE_DISPLAY_NAME_MAX))]
    pub display_name: Option<String>,
    /// Directory inside the source to build from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub base_directory: Option<String>,
    /// Branch, tag or ref of a git source (`main`, `v1.2.0`, `refs/heads/main`); the
    /// repository's default branch when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = TEXT_MAX))]
    pub git_ref: Option<String>,
    /// Commit of a git source to deploy (40 or 64 hex digits), on `gitRef`; its newest commit
    /// when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = COMMIT_SHA_PATTERN))]
    pub commit_sha: Option<String>,
    /// Settings of the source kind: `credentialId` (the SshCredential whose key reads a
    /// `git-deploy-key` repository) and `hostKeyFingerprint` (the git host's SSH key,
    /// `SHA256:…`; pinned on first contact when omitted).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// A full git commit id: SHA-1 (40) or SHA-256 (64) lower-case hex digits.
pub const COMMIT_SHA_PATTERN: &str = "^([0-9a-f]{40}|[0-9a-f]{64})$";

/// Who last changed a policy and which spec generation was last acted on: the start of the
/// status of RetentionPolicy and ThresholdPolicy, flattened into each.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyChange {
    /// When the policy last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Time>,
    /// Id of the actor who last changed the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by_actor_id: Option<String>,
    /// Kind of that actor, e.g. `user` or `deploy-token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by_actor_kind: Option<String>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// `true`, for `#[serde(default = ...)]` on flags that default on.
pub(crate) fn default_true() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;
    use serde_json::{Value, json};

    use crate::overlay_decision::{OverlayDecision, OverlayDecisionSpec};
    use crate::route_surface_decision::RouteSurfaceDecision;
    use crate::usage_intent::{UsageIntent, UsageIntentSpec};

    /// The context's fields as they appear directly under `spec`.
    const CONTEXT_KEYS: [&str; 7] = [
        "tenantId",
        "accountId",
        "organizationId",
        "actor",
        "resourceRefs",
        "attributes",
        "details",
    ];

    fn context_json() -> Value {
        json!({
            "tenantId": "t-1", "accountId": "a-1", "organizationId": "shop",
            "actor": {"kind": "user", "id": "usr-1"},
            "resourceRefs": {"resourceId": "res-1"},
            "attributes": {"tier": 1}, "details": {"why": ["x"]},
        })
    }

    fn with_context(mut spec: Value) -> Value {
        let context = context_json();
        spec.as_object_mut()
            .unwrap()
            .extend(context.as_object().unwrap().clone());
        spec
    }

    #[test]
    fn decision_context_is_stored_directly_under_spec() {
        let overlay = with_context(json!({
            "operationKey": "deployments.create", "decision": "enabled", "source": "cli",
            "capabilityKey": "deployments",
        }));
        let spec: OverlayDecisionSpec = serde_json::from_value(overlay.clone()).unwrap();
        assert_eq!(spec.decision.context.tenant_id.as_deref(), Some("t-1"));
        assert_eq!(serde_json::to_value(&spec).unwrap(), overlay);

        let intent = with_context(json!({
            "idempotencyKey": "k", "capabilityKey": "deployments", "source": "cli",
            "status": "accepted", "quantity": {"value": 1.0, "unit": "deployment"},
        }));
        let spec: UsageIntentSpec = serde_json::from_value(intent.clone()).unwrap();
        assert_eq!(serde_json::to_value(&spec).unwrap(), intent);

        let empty: UsageIntentSpec = serde_json::from_value(
            json!({"idempotencyKey": "k", "capabilityKey": "c", "source": "cli"}),
        )
        .unwrap();
        let stored = serde_json::to_value(&empty).unwrap();
        assert!(CONTEXT_KEYS.iter().all(|key| stored.get(key).is_none()));
    }

    #[test]
    fn every_decision_kind_schema_lists_the_context_fields_under_spec() {
        for crd in [
            OverlayDecision::crd(),
            RouteSurfaceDecision::crd(),
            UsageIntent::crd(),
        ] {
            let schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
            let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
            for key in CONTEXT_KEYS {
                assert!(
                    spec["properties"].get(key).is_some(),
                    "{}: spec.{key}",
                    crd.spec.names.kind
                );
            }
            let nested = spec["properties"].as_object().unwrap();
            assert!(!nested.contains_key("context"), "{}", crd.spec.names.kind);
            let attributes = &spec["properties"]["attributes"];
            assert_eq!(attributes["x-kubernetes-preserve-unknown-fields"], true);
        }
    }
}
