//! Push to deploy: `POST /webhooks/{provider}` receives GitHub, GitLab and Gitea push events.
//! A delivery is matched to the resources bound to its repository (however its URL is
//! spelled), and only those whose binding secret verifies its signature count; a delivery no
//! binding verifies is refused (401) and changes nothing. Each verified binding then starts an
//! attempt for the pushed commit when its auto-deploy policy follows the pushed ref, or says
//! why not. A redelivery (same delivery id) starts nothing twice.
//!
//! A pull request's (merge request's) event is verified the same way; each verified binding's
//! preview of it is then created, moved or removed ([`previews`]), whatever the binding's
//! auto-deploy policy says.

pub mod decide;
mod payload;
mod preview_decide;
mod previews;
mod pull_request;
mod signature;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use berth_api::build::SourceKind;
use berth_api::repository::RepoLocator;
use berth_crds::deployment::Deployment;
use berth_crds::preview::PREVIEW_LABEL;
use berth_crds::resource::Resource;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use serde_json::Value;
use sha2::{Digest, Sha256};

use self::decide::{Outcome, decide};
use self::payload::{EventKind, Provider, Push};
use self::signature::{Proof, verifies};
use super::Endpoint;
use crate::domain::webhooks::{WEBHOOK_SECRET_KEY, webhook_secret_name};
use crate::error::{ApiError, ApiResult};
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};

pub use self::signature::hmac_sha256;

pub use berth_api::webhooks::{IgnoredBinding, StartedAttempt, WebhookReceipt};

/// What started attempts made by a push (`spec.trigger`).
pub const TRIGGER: &str = "git-push";
/// Annotation of an attempt naming the delivery that started it.
const DELIVERY_ANNOTATION: &str = "berth.dev/webhook-delivery";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<Value, WebhookReceipt, _, _>(
            "/webhooks/{provider}",
            "Receive a push or pull request event of GitHub, GitLab or Gitea (provider \
             `github`, `gitlab`, `gitea`), signed with a source binding's webhook secret: for a \
             push, each verified binding whose auto-deploy follows the pushed ref deploys the \
             pushed commit; for a pull (merge) request, each verified binding's preview policy \
             decides whether its preview is created, moved to the new head or removed",
            receive,
        )
        .success(&[StatusCode::ACCEPTED])
        .public(),
    ]
}

async fn receive(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<(StatusCode, Json<WebhookReceipt>)> {
    let provider = Provider::parse(&provider).ok_or_else(|| {
        ApiError::validation("provider", "provider must be one of: github, gitlab, gitea")
            .with_detail("allowed", Provider::NAMES.to_vec())
    })?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let payload: Value = serde_json::from_slice(&body)
        .map_err(|_| ApiError::malformed("the webhook payload is not JSON"))?;
    let push = payload::read(provider, &payload);
    let proof = Proof {
        provider,
        value: header(provider.proof_header()).unwrap_or_default(),
    };
    let bindings = bound_resources(&state, &payload_identities(provider, &payload));
    let verified = verified(&state, bindings, &proof, &body).await?;
    if verified.is_empty() {
        return Err(ApiError::unauthenticated(
            "no source binding of this repository accepts the delivery's signature",
        ));
    }
    let event_header = header(provider.event_header()).unwrap_or_default();
    let git_ref = push.as_ref().map(|p| p.git_ref.clone()).unwrap_or_default();
    let kind = EventKind::of(provider, event_header, &git_ref);
    let delivery = header(provider.delivery_header()).map(str::to_string);
    let mut receipt = WebhookReceipt {
        provider: provider.as_str().into(),
        event: kind.as_str().into(),
        delivery_id: delivery.clone(),
        git_ref: push.as_ref().map(|p| p.git_ref.clone()),
        commit_sha: push.as_ref().map(|p| p.after.clone()),
        deployments: Vec::new(),
        ignored: Vec::new(),
        previews: Vec::new(),
    };
    if pull_request::is_event(provider, event_header) {
        receipt.event = previews::EVENT.into();
        previews::receive(&state, provider, &payload, verified, &mut receipt).await?;
        return Ok((StatusCode::ACCEPTED, Json(receipt)));
    }
    let push = push.unwrap_or_default();
    for resource in verified {
        let outcome = decide(&resource, kind, &push);
        record(
            &state,
            &resource,
            outcome,
            (&push, provider, delivery.as_deref()),
            &mut receipt,
        )
        .await?;
    }
    Ok((StatusCode::ACCEPTED, Json(receipt)))
}

/// Starts the attempt of a `Deploy` outcome, or notes why the resource ignores the push.
async fn record(
    state: &AppState,
    resource: &Resource,
    outcome: Outcome,
    (push, provider, delivery): (&Push, Provider, Option<&str>),
    receipt: &mut WebhookReceipt,
) -> ApiResult<()> {
    let resource_id = resource.name_any();
    match outcome {
        Outcome::Ignored { reason, message } => receipt.ignored.push(IgnoredBinding {
            resource_id,
            reason: reason.into(),
            message,
        }),
        Outcome::Deploy { git_ref, commit } => {
            let attempt = attempt(resource, &git_ref, &commit, provider, delivery);
            let (deployment_id, duplicate) = create(state, resource, attempt, push).await?;
            receipt.deployments.push(StartedAttempt {
                resource_id,
                deployment_id,
                duplicate,
            });
        }
    }
    Ok(())
}

/// The repository identities a payload names.
fn payload_identities(provider: Provider, payload: &Value) -> Vec<String> {
    let mut identities: Vec<String> = payload::read_repository_urls(provider, payload)
        .iter()
        .filter_map(|url| RepoLocator::parse(url).ok())
        .map(|repository| repository.identity())
        .collect();
    identities.sort();
    identities.dedup();
    identities
}

/// Resources of every organization whose git source is one of `identities`.
fn bound_resources(state: &AppState, identities: &[String]) -> Vec<Arc<Resource>> {
    if identities.is_empty() {
        return Vec::new();
    }
    state
        .caches
        .resources
        .state()
        .into_iter()
        .filter(|resource| resource.metadata.deletion_timestamp.is_none())
        // A preview's copy of a resource follows its preview, not the repository.
        .filter(|resource| !resource.labels().contains_key(PREVIEW_LABEL))
        .filter(|resource| {
            let Some(source) = &resource.spec.source else {
                return false;
            };
            let git = SourceKind::parse("source.kind", &source.kind).is_ok_and(SourceKind::is_git);
            git && RepoLocator::parse(&source.locator)
                .is_ok_and(|repository| identities.contains(&repository.identity()))
        })
        .collect()
}

/// The bindings whose webhook secret verifies the delivery.
async fn verified(
    state: &AppState,
    bindings: Vec<Arc<Resource>>,
    proof: &Proof<'_>,
    body: &[u8],
) -> ApiResult<Vec<Arc<Resource>>> {
    let mut verified = Vec::new();
    for resource in bindings {
        let namespace = resource.namespace().unwrap_or_default();
        let secrets = Api::<Secret>::namespaced(state.client.clone(), &namespace);
        let secret = secrets
            .get_opt(&webhook_secret_name(&resource.name_any()))
            .await?;
        let value = secret
            .and_then(|s| s.data)
            .and_then(|mut data| data.remove(WEBHOOK_SECRET_KEY))
            .and_then(|bytes| String::from_utf8(bytes.0).ok());
        if value.is_some_and(|secret| !secret.is_empty() && verifies(proof, &secret, body)) {
            verified.push(resource);
        }
    }
    Ok(verified)
}

/// The attempt of a push: the resource's source at the pushed commit of the pushed ref, named
/// after the delivery (or the commit), so a redelivery finds it instead of starting another.
fn attempt(
    resource: &Resource,
    git_ref: &str,
    commit: &str,
    provider: Provider,
    delivery: Option<&str>,
) -> Deployment {
    let name = resource.name_any();
    let seed = format!("{}\n{}", delivery.unwrap_or(commit), commit);
    let digest = hex::encode(Sha256::digest(seed.as_bytes()));
    let server = resource.spec.server_id.clone().unwrap_or_default();
    let destination = resource.spec.destination_id.clone();
    let attempt_name = format!("dep-{name}-g{}", &digest[..7]);
    let mut deployment =
        Deployment::of_resource(&attempt_name, resource, server, destination, TRIGGER);
    if let Some(source) = deployment.spec.source_snapshot.as_mut() {
        source.git_ref = Some(git_ref.to_string());
        source.commit_sha = Some(commit.to_string());
    }
    let annotations = deployment.metadata.annotations.get_or_insert_default();
    annotations.insert(UPDATED_BY_KIND.into(), "system".into());
    annotations.insert(
        UPDATED_BY_ID.into(),
        format!("webhook:{}", provider.as_str()),
    );
    if let Some(delivery) = delivery {
        annotations.insert(
            DELIVERY_ANNOTATION.into(),
            delivery.chars().take(253).collect(),
        );
    }
    deployment
}

/// Creates the attempt; an attempt of the same name means this delivery came before.
async fn create(
    state: &AppState,
    resource: &Resource,
    attempt: Deployment,
    push: &Push,
) -> ApiResult<(String, bool)> {
    let namespace = resource.namespace().unwrap_or_default();
    let api = Api::<Deployment>::namespaced(state.client.clone(), &namespace);
    let name = attempt.name_any();
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&params, &attempt).await {
        Ok(_) => {
            tracing::info!(
                deployment = %name,
                resource = %resource.name_any(),
                git_ref = %push.git_ref,
                commit = %push.after,
                "push to deploy: attempt started"
            );
            Ok((name, false))
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok((name, true)),
        Err(error) => Err(error.into()),
    }
}
