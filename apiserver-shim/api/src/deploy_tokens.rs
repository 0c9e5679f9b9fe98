//! Spec §4.8, deploy tokens.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::deploy_tokens::DeployTokenScope;

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateToken {
    /// The organization the token belongs to: the caller's current organization.
    pub organization_id: String,
    /// Name shown in lists (1-120 characters).
    pub display_name: String,
    /// What the token may act on; an empty or missing array places no limit of that kind.
    pub scope: ScopeInput,
    /// When the token stops working (ISO 8601, in the future); never when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// The six scope arrays of a new token.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScopeInput {
    /// Servers the token may deploy to.
    #[serde(default)]
    pub deployment_target_ids: Vec<String>,
    /// Environments the token may act on.
    #[serde(default)]
    pub environment_ids: Vec<String>,
    /// Projects the token may act on.
    #[serde(default)]
    pub project_ids: Vec<String>,
    /// Repositories (`owner/name`) the token may be used from.
    #[serde(default)]
    pub repository_full_names: Vec<String>,
    /// Resources the token may act on.
    #[serde(default)]
    pub resource_ids: Vec<String>,
    /// Workflow commands the token may run, e.g. `source-link-deploy`, `preview-cleanup`.
    #[serde(default)]
    pub workflow_commands: Vec<String>,
}

/// Body of rotate and revoke.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfirmedAction {
    /// The organization the token belongs to.
    pub organization_id: String,
    /// Must carry `tokenId` equal to the token being changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}

/// The Deploy token record of spec §2.2 (list and show); never the secret.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TokenRecord {
    pub token_id: String,
    pub organization_id: String,
    pub display_name: String,
    /// `active` or `revoked`.
    pub status: String,
    /// Last characters of the secret, to tell tokens apart.
    pub secret_suffix: String,
    pub scope: DeployTokenScope,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotated_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

/// `{ items }` of `GET /deploy-tokens`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct TokenList {
    pub items: Vec<TokenRecord>,
}

/// The Deploy token created record of spec §2.2: the only response besides rotate that
/// carries the secret.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CreatedToken {
    pub token_id: String,
    /// The secret bearer token; store it now, it is never shown again.
    pub token: String,
    pub organization_id: String,
    pub display_name: String,
    pub secret_suffix: String,
    pub scopes: DeployTokenScope,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// Result of a rotation: the new secret, shown once.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RotatedToken {
    pub token_id: String,
    /// The new secret bearer token; the previous one no longer works.
    pub token: String,
    pub rotated_at: String,
    pub scopes: DeployTokenScope,
}

/// Result of a revocation.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RevokedToken {
    pub token_id: String,
    pub revoked_at: String,
}
