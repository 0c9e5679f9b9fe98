//! Pull requests' events: for each verified binding, the preview of the pull request is
//! created, moved to the new head, or removed ([`decide`]), and the receipt says which, or
//! why not. The PreviewEnvironment is written in the resource's namespace, labelled with the
//! resource (`domain::previews::write`, which CI's previews share); the controller builds
//! (and on removal, tears down) what it stands for.

use std::sync::Arc;

use berth_api::webhooks::{PreviewReceipt, WebhookReceipt};
use berth_crds::preview::PreviewEnvironment;
use berth_crds::resource::Resource;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::DeleteParams;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, ResourceExt};
use serde_json::Value;

use super::payload::Provider;
use super::preview_decide::{PreviewOutcome, decide};
use super::pull_request::{self, Action};
use crate::domain::objects::all_in;
use crate::domain::previews::policies::effective;
use crate::domain::previews::write::{Writer, write};
use crate::error::ApiResult;
use crate::state::AppState;

/// The receipt's `event` for a pull request's delivery.
pub const EVENT: &str = "pull-request";

/// Acts on a pull request's event for each of the `verified` bindings.
pub async fn receive(
    state: &AppState,
    provider: Provider,
    payload: &Value,
    verified: Vec<Arc<Resource>>,
    receipt: &mut WebhookReceipt,
) -> ApiResult<()> {
    let action = pull_request::read_action(provider, payload);
    let event = pull_request::read(provider, payload);
    receipt.commit_sha = event.as_ref().map(|e| e.head_sha.clone());
    for resource in verified {
        let resource_id = resource.name_any();
        let entry = match (&event, &action) {
            (Some(event), _) => {
                let outcome = outcome(state, &resource, event, provider);
                act(state, &resource, outcome, provider).await?
            }
            (None, Action::Other(name)) => ignored(
                &resource_id,
                "not-a-pull-request-action",
                format!("the action `{name}` neither opens, updates nor closes a pull request"),
            ),
            (None, _) => ignored(
                &resource_id,
                "pull-request-unreadable",
                "the payload lacks the pull request's number, repository or head commit",
            ),
        };
        receipt.previews.push(entry);
    }
    Ok(())
}

fn ignored(resource_id: &str, reason: &str, message: impl Into<String>) -> PreviewReceipt {
    PreviewReceipt {
        resource_id: resource_id.to_string(),
        preview_environment_id: None,
        action: "ignored".into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
    }
}

/// The decision for `resource`, under the policy in force for it and given its preview.
fn outcome(
    state: &AppState,
    resource: &Resource,
    event: &pull_request::PullRequest,
    provider: Provider,
) -> PreviewOutcome {
    let namespace = resource.namespace().unwrap_or_default();
    let policies = all_in(&state.caches.preview_policies, &namespace);
    let policy = effective(
        &policies,
        &resource.spec.project_id,
        Some(&resource.name_any()),
    );
    let name = berth_crds::preview::preview_name(&resource.name_any(), event.number);
    let existing = state
        .caches
        .preview_environments
        .get(&ObjectRef::new(&name).within(&namespace));
    let now = Time(Timestamp::now());
    decide(
        resource,
        &policy.spec,
        event,
        existing.as_deref(),
        provider,
        now,
    )
}

/// Carries out `outcome` and says what it did.
async fn act(
    state: &AppState,
    resource: &Resource,
    outcome: PreviewOutcome,
    provider: Provider,
) -> ApiResult<PreviewReceipt> {
    let resource_id = resource.name_any();
    let namespace = resource.namespace().unwrap_or_default();
    let api = Api::<PreviewEnvironment>::namespaced(state.client.clone(), &namespace);
    let entry = |name: String, action: &str, why: Option<(&str, String)>| PreviewReceipt {
        resource_id: resource_id.clone(),
        preview_environment_id: Some(name),
        action: action.into(),
        reason: why.as_ref().map(|(reason, _)| reason.to_string()),
        message: why.map(|(_, message)| message),
    };
    Ok(match outcome {
        PreviewOutcome::Apply {
            name,
            spec,
            created,
        } => {
            let writer = Writer::Webhook(provider.as_str());
            write(state, &namespace, &name, *spec, writer).await?;
            tracing::info!(preview = %name, resource = %resource_id, created, "preview written");
            entry(name, if created { "created" } else { "updated" }, None)
        }
        PreviewOutcome::Remove { name } => {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error.into()),
            }
            tracing::info!(preview = %name, resource = %resource_id, "preview removal requested");
            entry(name, "cleanup-requested", None)
        }
        PreviewOutcome::Unchanged {
            name,
            reason,
            message,
        } => entry(name, "unchanged", Some((reason, message))),
        PreviewOutcome::Ignored {
            name,
            reason,
            message,
        } => PreviewReceipt {
            preview_environment_id: name,
            ..ignored(&resource_id, reason, message)
        },
    })
}
