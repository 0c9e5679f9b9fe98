//! A resource's source and auto-deploy policy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource_input::SourceInput;
use crate::validate::{Checked, optional_text};

/// Longest `idempotencyKey` of a source change.
pub const IDEMPOTENCY_KEY_MAX: usize = 253;

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetAutoDeploy {
    /// `enable` or `disable`.
    pub mode: String,
    /// What triggers a deployment; default `git-push`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger_kind: Option<String>,
    /// Source refs that trigger a deployment, e.g. `refs/heads/main`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refs: Option<Vec<String>>,
    /// Event kinds that trigger a deployment: `push`, `tag`; default `["push"]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_kinds: Option<Vec<String>>,
    /// With `enable`: a new webhook secret for the binding even if it has one (the old one
    /// stops verifying). A git source's first enable creates one; either way it is shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotate_webhook_secret: Option<bool>,
}

// `POST /resources/{id}/source` (no doc comment: it would become the schema's description).
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetSource {
    pub source: SourceInput,
    /// A repeat with the same key returns the same result and changes nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl SetSource {
    pub fn validate(&self) -> Checked {
        self.source.validate()?;
        optional_text(
            "idempotencyKey",
            self.idempotency_key.as_ref(),
            IDEMPOTENCY_KEY_MAX,
        )
    }
}

/// Auto-deploy policy result of spec §2.2.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoDeployResult {
    pub resource_id: String,
    /// `enabled`, `disabled` or `blocked`.
    pub status: String,
    pub trigger_kind: String,
    pub refs: Vec<String>,
    pub event_kinds: Vec<String>,
    /// Fingerprint of the source binding auto-deploy was enabled for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_binding_fingerprint: Option<String>,
    /// Why an enabled policy does not fire, e.g. `source-binding-changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// The webhook secret of a git source's binding, shown once: when enabling created it or
    /// `rotateWebhookSecret` replaced it. Pushes are delivered to `POST /webhooks/{provider}`
    /// signed with it (GitHub and Gitea) or carrying it (GitLab's token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(source: serde_json::Value, key: Option<String>) -> SetSource {
        SetSource {
            source: serde_json::from_value(source).unwrap(),
            idempotency_key: key,
        }
    }

    #[test]
    fn a_source_change_names_the_field_it_refuses() {
        let image = serde_json::json!({"kind": "docker-image", "locator": "nginx:1"});
        assert!(set(image.clone(), None).validate().is_ok());
        assert!(set(image.clone(), Some("k-1".into())).validate().is_ok());
        let long_key = Some("k".repeat(IDEMPOTENCY_KEY_MAX + 1));
        let empty = serde_json::json!({"kind": "docker-image", "locator": ""});
        for (body, field) in [
            (set(image.clone(), long_key), "idempotencyKey"),
            (set(image, Some(String::new())), "idempotencyKey"),
            (set(empty, None), "source.locator"),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
    }
}
