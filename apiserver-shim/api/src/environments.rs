//! Spec §4.5, environments.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::environments::ENVIRONMENT_KINDS;

use crate::limits::{NAME_MAX, OBJECT_NAME_MAX};
use crate::validate::{Checked, FieldError, bounded, optional_text};

/// An environment's `kind`: one of [`ENVIRONMENT_KINDS`].
pub fn check_kind(field: &str, kind: &str) -> Checked {
    if ENVIRONMENT_KINDS.contains(&kind) {
        return Ok(());
    }
    Err(FieldError::not_one_of(field, ENVIRONMENT_KINDS))
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateEnvironment {
    /// The project it belongs to (active, in the caller's organization).
    pub project_id: String,
    /// Display name, unique among the project's active environments (1-120 characters).
    pub name: String,
    /// `local`, `development`, `test`, `staging`, `production`, `preview` or `custom`.
    #[schemars(extend("enum" = ENVIRONMENT_KINDS))]
    pub kind: String,
    /// An environment of the same project this one derives from (previews).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_environment_id: Option<String>,
}

impl CreateEnvironment {
    /// The rules of the fields the shim checks before it looks the project up.
    /// `parentEnvironmentId` is checked after that lookup (a caller outside the project gets
    /// its 403 or 404 first), so it is not here.
    pub fn validate(&self) -> Checked {
        bounded("projectId", &self.project_id, OBJECT_NAME_MAX)?;
        bounded("name", &self.name, NAME_MAX)?;
        check_kind("kind", &self.kind)
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArchiveEnvironment {
    /// Why the environment is archived (shown as `archiveReason`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Longest `reason` of an archive.
pub const ARCHIVE_REASON_MAX: usize = 1000;

impl ArchiveEnvironment {
    pub fn validate(&self) -> Checked {
        optional_text("reason", self.reason.as_ref(), ARCHIVE_REASON_MAX)
    }
}

/// The Environment record of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentRecord {
    pub id: String,
    pub project_id: String,
    pub name: String,
    /// e.g. `local`, `production`, `staging`, `preview`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_environment_id: Option<String>,
    /// `active` or `archived`.
    pub lifecycle_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive_reason: Option<String>,
    pub created_at: String,
    /// The environment's variables; values of secret-looking keys read `****`.
    pub masked_variables: Vec<MaskedVariable>,
}

/// One environment variable as the API shows it.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct MaskedVariable {
    pub key: String,
    /// The value, or `****` when the key or value looks secret.
    pub value: String,
    /// Always `environment`: inherited by every resource of the environment.
    pub scope: String,
    /// `build-time` or `runtime`.
    pub exposure: String,
    pub is_secret: bool,
    /// `secret` or `plain-config`.
    pub kind: String,
}

/// `{ items }` of `GET /environments`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct EnvironmentList {
    pub items: Vec<EnvironmentRecord>,
}

/// `POST /environments/{environmentId}/variables`: sets one plain variable every resource of
/// the environment inherits (Appaloft's body). Secret values belong to a resource's secrets.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetEnvironmentVariable {
    pub key: String,
    /// May be empty.
    pub value: String,
    /// `build-time` or `runtime` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
    /// `plain-config` (default) or `secret`: kept in a Secret the environment owns, shown masked,
    /// given to every resource of the environment that does not set the same variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `environment` (the only scope written here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `true` is `kind: secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_secret: Option<bool>,
}

/// `DELETE /environments/{environmentId}/variables/{key}`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UnsetEnvironmentVariable {
    /// `build-time` or `runtime` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exposure: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// `POST /environments/{environmentId}/rename`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenameEnvironment {
    /// Unique among the project's active environments (1-120 characters).
    pub name: String,
}

/// `POST /environments/{environmentId}/lock`: deployments and changes of the environment and
/// its resources are refused until it is unlocked.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockEnvironment {
    /// Why (at most 280 characters), shown in every refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl RenameEnvironment {
    /// The name as it is stored: without the spaces around it.
    pub fn validate(&self) -> Checked {
        bounded("name", self.name.trim(), NAME_MAX)
    }
}

/// Longest `reason` of a lock.
pub const LOCK_REASON_MAX: usize = 280;

impl LockEnvironment {
    /// The reason as it is stored: without the spaces around it.
    pub fn validate(&self) -> Checked {
        match &self.reason {
            Some(reason) => bounded("reason", reason.trim(), LOCK_REASON_MAX),
            None => Ok(()),
        }
    }
}

/// `POST /environments/{environmentId}/unlock`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields)]
pub struct UnlockEnvironment {}

/// `POST /environments/{environmentId}/clone`: a new environment of the same project with a
/// copy of this one's variables.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CloneEnvironment {
    pub target_name: String,
    /// The new environment's kind; the source's when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_kind: Option<String>,
}

/// `POST /environments/{environmentId}/promote`: this environment's variables copied into
/// another — an existing one (`targetEnvironmentId`, confirmed, e.g. staging into production)
/// or a new one (`targetName` and `targetKind`, as Appaloft does). Read the
/// `GET /environments/{id}/diff/{other}` first.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PromoteEnvironment {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_environment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_kind: Option<String>,
    /// With `targetEnvironmentId`: `confirmation.environmentId` repeats it (its variables
    /// change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<crate::common::Confirmation>,
}

/// How a variable differs between two environments.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum VariableChange {
    Added,
    Removed,
    Changed,
    Unchanged,
}

/// One entry of `GET /environments/{environmentId}/diff/{otherEnvironmentId}` (Appaloft's
/// answer is the bare list): `left` is the first environment's, `right` the other's; `added`
/// means only `right` has it. Secret-looking values read `****` on both sides; a change hidden
/// behind the mask still says `changed`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct VariableDiff {
    pub key: String,
    pub exposure: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left: Option<MaskedVariable>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub right: Option<MaskedVariable>,
    pub change: VariableChange,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(project_id: &str, name: &str, kind: &str) -> CreateEnvironment {
        CreateEnvironment {
            project_id: project_id.into(),
            name: name.into(),
            kind: kind.into(),
            parent_environment_id: None,
        }
    }

    #[test]
    fn a_new_environment_names_the_field_it_refuses() {
        assert!(create("prj-1", "Staging", "staging").validate().is_ok());
        let long_name = "x".repeat(NAME_MAX + 1);
        for (body, field) in [
            (create("", "Staging", "staging"), "projectId"),
            (create("prj-1", &long_name, "staging"), "name"),
            (create("prj-1", " ", "staging"), "name"),
            (create("prj-1", "Staging", "Production"), "kind"),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
        let kind = create("prj-1", "Staging", "plain").validate().unwrap_err();
        assert_eq!(kind.allowed.len(), ENVIRONMENT_KINDS.len());
    }

    #[test]
    fn an_archive_reason_is_bounded() {
        let archive = |reason: Option<String>| ArchiveEnvironment { reason };
        assert!(archive(None).validate().is_ok());
        assert!(archive(Some("done".into())).validate().is_ok());
        let long = archive(Some("x".repeat(ARCHIVE_REASON_MAX + 1)));
        assert_eq!(long.validate().unwrap_err().max, Some(1000));
        assert_eq!(
            archive(Some("".into())).validate().unwrap_err().field,
            "reason"
        );
    }

    #[test]
    fn a_rename_or_lock_is_measured_trimmed() {
        let rename = |name: &str| RenameEnvironment { name: name.into() };
        assert!(
            rename(&format!(" {} ", "n".repeat(NAME_MAX)))
                .validate()
                .is_ok()
        );
        assert_eq!(rename("  ").validate().unwrap_err().field, "name");
        assert_eq!(
            rename(&"n".repeat(121)).validate().unwrap_err().field,
            "name"
        );
        let lock = |reason: Option<&str>| LockEnvironment {
            reason: reason.map(str::to_string),
        };
        assert!(lock(None).validate().is_ok());
        assert!(lock(Some(" deploy freeze ")).validate().is_ok());
        let long = "r".repeat(LOCK_REASON_MAX + 1);
        assert_eq!(lock(Some(&long)).validate().unwrap_err().field, "reason");
        assert_eq!(lock(Some(" ")).validate().unwrap_err().field, "reason");
    }
}
