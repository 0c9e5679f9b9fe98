//! Spec §4.8, deploy tokens.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;
use crate::limits::{NAME_MAX, OBJECT_NAME_MAX};
use crate::validate::{Checked, FieldError, bounded};

/// Most ids one scope array may hold.
pub const SCOPE_ENTRIES_MAX: usize = 100;

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

impl CreateToken {
    /// The rules of the name and the scope. `organizationId` is checked with the caller's
    /// rights (before these), `expiresAt` against the clock (after them).
    pub fn validate(&self) -> Checked {
        bounded("displayName", &self.display_name, NAME_MAX)?;
        self.scope.validate()
    }
}

impl ScopeInput {
    /// Each array holds at most [`SCOPE_ENTRIES_MAX`] ids of 1..=253 characters.
    pub fn validate(&self) -> Checked {
        check_ids("deploymentTargetIds", &self.deployment_target_ids)?;
        check_ids("environmentIds", &self.environment_ids)?;
        check_ids("projectIds", &self.project_ids)?;
        check_ids("repositoryFullNames", &self.repository_full_names)?;
        check_ids("resourceIds", &self.resource_ids)?;
        check_ids("workflowCommands", &self.workflow_commands)
    }
}

fn check_ids(field: &str, ids: &[String]) -> Checked {
    if ids.len() > SCOPE_ENTRIES_MAX {
        return Err(FieldError::new(
            &format!("scope.{field}"),
            format!("scope.{field} may hold at most {SCOPE_ENTRIES_MAX} entries"),
        ));
    }
    for (index, id) in ids.iter().enumerate() {
        bounded(&format!("scope.{field}[{index}]"), id, OBJECT_NAME_MAX)?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn create(display_name: &str, scope: ScopeInput) -> CreateToken {
        CreateToken {
            organization_id: "acme".into(),
            display_name: display_name.into(),
            scope,
            expires_at: None,
        }
    }

    #[test]
    fn a_new_token_names_the_field_it_refuses() {
        let projects = |ids: Vec<String>| ScopeInput {
            project_ids: ids,
            ..Default::default()
        };
        assert!(
            create("CI", projects(vec!["prj-1".into()]))
                .validate()
                .is_ok()
        );
        let too_many = vec!["prj-1".to_string(); SCOPE_ENTRIES_MAX + 1];
        let resources = ScopeInput {
            resource_ids: vec!["res-1".into(), "".into()],
            ..Default::default()
        };
        for (body, field) in [
            (create("", ScopeInput::default()), "displayName"),
            (
                create(&"n".repeat(121), ScopeInput::default()),
                "displayName",
            ),
            (create("CI", projects(too_many)), "scope.projectIds"),
            (
                create("CI", projects(vec!["p".repeat(254)])),
                "scope.projectIds[0]",
            ),
            (create("CI", resources), "scope.resourceIds[1]"),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
    }
}
