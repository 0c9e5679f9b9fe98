//! Preview environments (`/preview-environments`): list, show, delete.

use berth_api::previews::{
    CleanupStatus, DeletePreviewEnvironment, PreviewCleanupAnswer, PreviewEnvironmentList,
    PreviewEnvironmentShow, PreviewEnvironmentSummary, PreviewLeftover, PreviewLeftovers,
};

use super::workspace::project_id;
use super::{Answer, Ctx, find_resource};
use crate::cli::Previews;
use crate::error::{CliError, CliResult};
use crate::output::{Row, optional, text};

/// The first 12 digits of a commit, as people read them.
fn short(sha: &str) -> String {
    text(&sha.chars().take(12).collect::<String>())
}

/// `True`, or the reason it is not (`False Deploying`).
fn readiness(preview: &PreviewEnvironmentSummary) -> String {
    let ready = &preview.ready;
    match ready.status.as_str() {
        "True" => "True".into(),
        status => format!("{status} {}", ready.reason).trim().to_string(),
    }
}

impl Row for PreviewEnvironmentSummary {
    const HEADERS: &'static [&'static str] =
        &["ID", "RESOURCE", "PR", "HEAD", "STATUS", "READY", "URL"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.preview_environment_id),
            text(&self.resource_id),
            format!("#{}", self.source.pull_request_number),
            short(&self.source.head_sha),
            text(&self.status),
            readiness(self),
            optional(self.url.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.preview_environment_id
    }
}

/// A preview as `berth previews show` prints it: everything the summary says.
struct PreviewDetail(PreviewEnvironmentSummary);

impl Row for PreviewDetail {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "PROJECT",
        "RESOURCE",
        "PULL REQUEST",
        "REPOSITORY",
        "HEAD",
        "FORK",
        "SECRETS",
        "STATUS",
        "READY",
        "MESSAGE",
        "URL",
        "SERVING",
        "DEPLOYMENT",
        "ENVIRONMENT",
        "SERVER",
        "UPDATED",
        "EXPIRES",
    ];

    fn cells(&self) -> Vec<String> {
        let p = &self.0;
        let source = &p.source;
        vec![
            text(&p.preview_environment_id),
            text(&p.project_id),
            text(&p.resource_id),
            format!(
                "#{} ({} -> {})",
                source.pull_request_number, p.head_ref, source.base_ref
            ),
            format!("{} ({})", source.repository_full_name, source.provider),
            format!(
                "{} of {}",
                short(&source.head_sha),
                source.head_repository_full_name
            ),
            p.fork.to_string(),
            p.with_secrets.to_string(),
            text(&p.status),
            readiness(p),
            text(&p.ready.message),
            optional(p.url.as_ref()),
            optional(p.serving_sha.as_ref()),
            optional(p.deployment_id.as_ref()),
            text(&p.environment_id),
            optional(p.server_id.as_ref()),
            text(&p.updated_at),
            optional(p.expires_at.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.0.preview_environment_id
    }
}

/// What a removal's answer means for people.
fn removal_message(id: &str, removal: &PreviewCleanupAnswer) -> String {
    match removal.status {
        CleanupStatus::Cleaned => {
            format!("Removed preview {id} with its environment, containers and route")
        }
        CleanupStatus::AlreadyClean => format!("No preview {id}: nothing to remove"),
        CleanupStatus::RetryScheduled => format!(
            "Removal of preview {id} goes on in the background; `berth previews show {id}` \
             tells when it is gone"
        ),
    }
}

pub fn previews(ctx: &Ctx, command: Previews) -> CliResult<()> {
    match command {
        Previews::List {
            resource,
            project,
            pull_request,
        } => {
            let mut query = Vec::new();
            if let Some(project) = project {
                query.push(("projectId", project_id(ctx, &project)?));
            }
            if let Some(resource) = resource {
                query.push(("resourceId", find_resource(ctx, &resource)?.id));
            }
            if let Some(number) = pull_request {
                query.push(("pullRequestNumber", number.to_string()));
            }
            let Answer {
                raw: answer,
                value: list,
            } = ctx
                .api()?
                .get::<PreviewEnvironmentList>("/preview-environments", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Previews::Show { preview } => {
            let path = format!("/preview-environments/{preview}");
            let Answer {
                raw: answer,
                value: shown,
            } = ctx.api()?.get::<PreviewEnvironmentShow>(&path, &[])?;
            ctx.out
                .row(&answer, &PreviewDetail(shown.preview_environment));
            Ok(())
        }
        Previews::Delete { preview } => {
            let path = format!("/preview-environments/{preview}");
            let answer = ctx
                .api()?
                .delete::<PreviewCleanupAnswer>(&path, &DeletePreviewEnvironment::default())?;
            ctx.out
                .done(&answer.raw, &removal_message(&preview, &answer.value));
            Ok(())
        }
        Previews::Leftovers => {
            let Answer {
                raw: answer,
                value: check,
            } = ctx
                .api()?
                .get::<PreviewLeftovers>("/preview-environments/leftovers", &[])?;
            if !check.items.is_empty() {
                ctx.out.rows(&answer, &check.items);
            } else {
                ctx.out.done(&answer, &checked_message(&check));
            }
            check_outcome(&check)
        }
    }
}

impl Row for PreviewLeftover {
    const HEADERS: &'static [&'static str] = &["PREVIEW", "KIND", "NAME", "SERVER"];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.preview_environment_id),
            text(&self.kind),
            text(&self.name),
            optional(self.server_id.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.name
    }
}

/// What a check that found nothing read (a server it could not read is the command's error).
fn checked_message(check: &PreviewLeftovers) -> String {
    let read = match check.checked_servers.as_slice() {
        [] => "no server read".to_string(),
        servers => format!("servers read: {}", servers.join(", ")),
    };
    if check.unchecked_servers.is_empty() {
        format!("Nothing is left of previews that are gone ({read})")
    } else {
        format!(
            "Nothing is left of previews that are gone in the cluster and on the servers read ({read})"
        )
    }
}

/// A failure naming what is left or which servers could not be read; fine when neither.
fn check_outcome(check: &PreviewLeftovers) -> CliResult<()> {
    let unread: Vec<String> = check
        .unchecked_servers
        .iter()
        .map(|s| format!("server {} could not be read: {}", s.server_id, s.reason))
        .collect();
    match (check.items.len(), unread.is_empty()) {
        (0, true) => Ok(()),
        (0, false) => Err(CliError::failure(unread.join("; "))),
        (left, _) => {
            let mut message = format!("{left} thing(s) left of previews that are gone");
            for line in unread {
                message.push_str("; ");
                message.push_str(&line);
            }
            Err(CliError::failure(message))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removal_reads_as_what_happened() {
        let answer: PreviewCleanupAnswer = serde_json::from_value(serde_json::json!({
            "status": "retry-scheduled", "attemptId": "u", "previewEnvironmentId": "web-pr-7",
            "resourceId": "web", "sourceBindingFingerprint": "sha256:x",
            "previewEnvironmentStatus": "cleanup-requested", "cleanedRuntime": false,
            "removedRoute": false, "removedSourceLink": false,
            "removedProviderMetadata": false, "updatedFeedback": false, "retryable": true,
        }))
        .unwrap();
        assert!(removal_message("web-pr-7", &answer).contains("background"));
    }

    #[test]
    fn a_check_fails_when_something_is_left_or_a_server_was_not_read() {
        let check = |items: serde_json::Value, unchecked: serde_json::Value| {
            let check: PreviewLeftovers = serde_json::from_value(serde_json::json!({
                "schemaVersion": "preview-environments.leftovers/v1", "items": items,
                "checkedServers": ["edge"], "uncheckedServers": unchecked,
                "generatedAt": "2026-12-07T00:00:00Z",
            }))
            .unwrap();
            check_outcome(&check).map_err(|e| e.to_string())
        };
        assert!(check(serde_json::json!([]), serde_json::json!([])).is_ok());
        let left = serde_json::json!([{"previewEnvironmentId": "web-pr-1", "kind": "volume",
            "name": "data", "serverId": "edge"}]);
        assert!(
            check(left, serde_json::json!([]))
                .unwrap_err()
                .contains("1 thing(s) left")
        );
        let unread = serde_json::json!([{"serverId": "far", "reason": "no answer"}]);
        assert!(
            check(serde_json::json!([]), unread)
                .unwrap_err()
                .contains("server far could not be read: no answer")
        );
    }
}
