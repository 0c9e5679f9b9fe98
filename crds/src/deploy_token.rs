//! DeployToken: a scoped bearer credential for CI (spec §2.2 "Deploy token", §3, §5). Only a
//! SHA-256 digest of the secret is stored; reads show `secretSuffix`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Condition;
use crate::common::SHA256_DIGEST_PATTERN;
use crate::limits::NAME_MAX;

/// State of a deploy token.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeployTokenState {
    Active,
    Revoked,
}

/// A deploy token of the organization owning this namespace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "berth.dev",
    version = "v1alpha1",
    kind = "DeployToken",
    namespaced,
    shortname = "btok",
    category = "berth",
    doc = "A scoped deploy token; only a SHA-256 digest of its secret is stored.",
    status = "DeployTokenStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Suffix","type":"string","jsonPath":".spec.secretSuffix"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Expires","type":"string","jsonPath":".spec.expiresAt"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DeployTokenSpec {
    /// Display name.
    #[schemars(length(min = 1, max = NAME_MAX))]
    pub display_name: String,
    /// What the token may act on; an empty array places no restriction of that kind.
    #[serde(default)]
    pub scope: DeployTokenScope,
    /// When the token stops being accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,
    /// Set to revoke the token; a revoked token is never accepted again.
    #[serde(default)]
    pub revoked: bool,
    /// SHA-256 digest of the token secret, `sha256:<64 hex digits>`; never the secret itself.
    #[schemars(regex(pattern = SHA256_DIGEST_PATTERN))]
    pub secret_digest: String,
    /// Last characters of the secret, shown on reads so users can tell tokens apart.
    #[schemars(length(min = 1, max = 8))]
    pub secret_suffix: String,
}

/// The six scope arrays of a deploy token: a wire type too, defined in `berth-vocabulary`.
pub use berth_vocabulary::deploy_tokens::DeployTokenScope;

/// What the platform observed about a deploy token.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeployTokenStatus {
    /// `active` or `revoked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DeployTokenState>,
    /// When the token was revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Time>,
    /// When the secret was last rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotated_at: Option<Time>,
    /// When the token last authenticated a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Time>,
    /// Generation of the spec last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Current conditions; `Ready` while the token is accepted.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
