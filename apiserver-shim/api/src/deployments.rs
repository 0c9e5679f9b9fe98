//! Spec §6, deployments started through the event stream, and an attempt's stored timeline.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::build::{check_commit_sha, check_git_ref};
use crate::limits::OBJECT_NAME_MAX;
use crate::progress::ProgressEvent;
use crate::validate::{Checked, FieldError, bounded, optional_text};

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::deployments::DeploymentState;

/// The timeline's `schemaVersion`.
pub const TIMELINE_SCHEMA_VERSION: &str = "deployments.timeline/v1";

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartDeployment {
    /// The resource's project.
    pub project_id: String,
    /// The server to deploy to: the one the resource names.
    pub server_id: String,
    /// The resource's environment.
    pub environment_id: String,
    /// The resource to deploy (its current source is deployed).
    pub resource_id: String,
    /// Deployment destination on the server; the resource's when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
    /// A git source's commit to deploy (40 or 64 hex digits) instead of its ref's newest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_sha: Option<String>,
    /// A git source's branch, tag or ref to deploy instead of the one the resource follows
    /// (with `preview`: the pull request's head branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Deploy `commitSha` (then required) to this pull request's preview environment instead
    /// of the resource itself: CI without a forge webhook. Only `POST /deployments`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<DeploymentPreview>,
}

impl StartDeployment {
    /// Every rule the request can be checked by without the cluster (the shim runs them
    /// after the role check, before any lookup).
    pub fn validate(&self) -> Checked {
        bounded("projectId", &self.project_id, OBJECT_NAME_MAX)?;
        bounded("serverId", &self.server_id, OBJECT_NAME_MAX)?;
        bounded("environmentId", &self.environment_id, OBJECT_NAME_MAX)?;
        bounded("resourceId", &self.resource_id, OBJECT_NAME_MAX)?;
        optional_text(
            "destinationId",
            self.destination_id.as_ref(),
            OBJECT_NAME_MAX,
        )?;
        if let Some(sha) = &self.commit_sha {
            check_commit_sha("commitSha", sha)?;
        }
        if let Some(git_ref) = &self.git_ref {
            check_git_ref("gitRef", git_ref)?;
        }
        if let Some(preview) = &self.preview {
            preview.pull_request_number()?;
            // The preview deploys a commit, never "the newest of a branch".
            if self.commit_sha.is_none() {
                return Err(FieldError::new(
                    "commitSha",
                    "commitSha is required with preview: the commit the preview deploys",
                ));
            }
        }
        Ok(())
    }
}

/// What a preview deployment is of.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DeploymentPreviewKind {
    PullRequest,
}

/// `preview` of `POST /deployments`: the pull request whose preview environment gets the
/// commit (created on its first deployment, moved to the commit after).
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeploymentPreview {
    /// `pull-request`.
    pub kind: DeploymentPreviewKind,
    /// `pr-<number>`: the pull request's number (`pr-7`).
    pub preview_id: String,
}

impl DeploymentPreview {
    /// A pull request's preview (`pr-<number>`).
    pub fn pull_request(number: u64) -> Self {
        Self {
            kind: DeploymentPreviewKind::PullRequest,
            preview_id: format!("pr-{number}"),
        }
    }

    /// The pull request's number, or an error naming `preview.previewId`.
    pub fn pull_request_number(&self) -> Result<u64, FieldError> {
        parse_preview_id(&self.preview_id).ok_or_else(|| {
            FieldError::new(
                "preview.previewId",
                "preview.previewId must be pr-<number>: a pull request's number such as pr-7",
            )
        })
    }
}

/// The number of `pr-<number>` (a positive decimal integer without leading zeros or sign).
pub fn parse_preview_id(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("pr-")?;
    let plain = !digits.is_empty()
        && digits.len() <= 19
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    plain.then(|| digits.parse().ok()).flatten()
}

/// `POST /deployments`: the attempt started, to follow with its timeline.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentCreated {
    pub id: String,
}

/// `GET /resources/{resourceId}/deployments/{deploymentId}/timeline`: an attempt's timeline,
/// oldest entry first.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// `deployments.timeline/v1`.
    pub schema_version: String,
    pub resource_id: String,
    pub deployment_id: String,
    /// The attempt's status, while its Deployment object exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<DeploymentState>,
    pub entries: Vec<TimelineItem>,
    /// Pass as `after` to read on; absent once the timeline was read to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<i64>,
    pub generated_at: String,
}

/// One entry: a deployment progress event (spec §6) and its place in the timeline.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct TimelineItem {
    /// Increases along the timeline; pass the last one seen as `after` to read on.
    pub sequence: i64,
    #[serde(flatten)]
    pub event: ProgressEvent,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_ids_are_pull_request_numbers() {
        assert_eq!(parse_preview_id("pr-7"), Some(7));
        assert_eq!(parse_preview_id("pr-123456"), Some(123456));
        for bad in [
            "pr-0",
            "pr-07",
            "pr-",
            "pr--7",
            "pr-+7",
            "7",
            "PR-7",
            "pr-7a",
            "pr-99999999999999999999",
        ] {
            assert_eq!(parse_preview_id(bad), None, "{bad}");
        }
        let preview = DeploymentPreview::pull_request(7);
        assert_eq!(preview.pull_request_number().unwrap(), 7);
        let wrong = DeploymentPreview {
            preview_id: "feature-x".into(),
            ..preview
        };
        assert_eq!(
            wrong.pull_request_number().unwrap_err().field,
            "preview.previewId"
        );
        let parsed: StartDeployment = serde_json::from_value(serde_json::json!({
            "projectId": "shop", "serverId": "edge", "environmentId": "production",
            "resourceId": "web", "commitSha": "a".repeat(40),
            "preview": {"kind": "pull-request", "previewId": "pr-7"},
        }))
        .unwrap();
        assert_eq!(parsed.preview, Some(DeploymentPreview::pull_request(7)));
    }

    fn start(extra: serde_json::Value) -> StartDeployment {
        let mut body = serde_json::json!({
            "projectId": "shop", "serverId": "edge", "environmentId": "production",
            "resourceId": "web",
        });
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn a_start_names_the_field_it_refuses() {
        let sha = "a".repeat(40);
        let preview = serde_json::json!({"kind": "pull-request", "previewId": "pr-7"});
        assert!(start(serde_json::json!({})).validate().is_ok());
        assert!(
            start(serde_json::json!({"preview": preview.clone(), "commitSha": sha}))
                .validate()
                .is_ok()
        );
        let long = "x".repeat(254);
        let bad_preview = serde_json::json!({"kind": "pull-request", "previewId": "feature-x"});
        for (extra, field) in [
            (serde_json::json!({"projectId": ""}), "projectId"),
            (serde_json::json!({"serverId": long}), "serverId"),
            (serde_json::json!({"environmentId": " "}), "environmentId"),
            (serde_json::json!({"resourceId": long}), "resourceId"),
            (serde_json::json!({"destinationId": long}), "destinationId"),
            (serde_json::json!({"commitSha": "abc"}), "commitSha"),
            (serde_json::json!({"gitRef": "a..b"}), "gitRef"),
            (serde_json::json!({"preview": preview}), "commitSha"),
            (
                serde_json::json!({"preview": bad_preview, "commitSha": sha}),
                "preview.previewId",
            ),
        ] {
            let error = start(extra.clone()).validate().unwrap_err();
            assert_eq!(error.field, field, "{extra}");
        }
    }
}
