//! The source binding (idempotent by key) and the auto-deploy policy, which a changed source
//! binding blocks until it is enabled again.

use axum::extract::{Path, State};
use berth_api::build::SourceKind;
use berth_api::common::IdResponse;
use berth_crds::resource::{Resource, source_binding_fingerprint};
use kube::ResourceExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::super::Endpoint;
use super::profiles::for_write;
use super::{lookup, save, save_object, webhook_secret};
use crate::auth::Caller;
use crate::domain::fields::bounded;
use crate::domain::resource_input::source_descriptor;
use crate::domain::webhooks::GIT_PUSH;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::source::{SetAutoDeploy, SetSource};

pub use berth_api::source::AutoDeployResult;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<SetSource, IdResponse, _, _>(
            "/resources/{resourceId}/source",
            "Bind the resource to a source (idempotent with idempotencyKey)",
            source,
        ),
        Endpoint::post::<SetAutoDeploy, AutoDeployResult, _, _>(
            "/resources/{resourceId}/auto-deploy",
            "Enable or disable auto-deploy",
            auto_deploy,
        ),
        Endpoint::get::<AutoDeployResult, _, _>(
            "/resources/{resourceId}/auto-deploy",
            "Show the auto-deploy policy and whether it is blocked",
            show_auto_deploy,
        ),
    ]
}

/// Annotation holding the recent source bindings' idempotency keys and request digests (JSON).
pub const SOURCE_IDEMPOTENCY_ANNOTATION: &str = "berth.dev/source-idempotency";

/// How many idempotency keys a resource remembers; the oldest is forgotten first.
const MAX_SOURCE_RECEIPTS: usize = 16;

/// One remembered source binding: its idempotency key and the SHA-256 of its request. Not a
/// wire record: kept on the Resource object, never sent.
#[derive(Serialize, Deserialize)]
struct SourceReceipt {
    key: String,
    digest: String,
}

/// The receipts stored on a resource (none when the annotation is missing or unreadable).
fn source_receipts(resource: &Resource) -> Vec<SourceReceipt> {
    resource
        .annotations()
        .get(SOURCE_IDEMPOTENCY_ANNOTATION)
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

async fn source(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetSource>,
) -> ApiResult<Json<IdResponse>> {
    let resource = for_write(&state, &caller, &id)?;
    body.validate()?;
    let request = serde_json::to_vec(&body.source).map_err(ApiError::internal)?;
    let mut receipts = source_receipts(&resource);
    if let Some(key) = &body.idempotency_key {
        let digest = hex::encode(Sha256::digest(&request));
        match receipts.iter().find(|r| &r.key == key) {
            Some(previous) if previous.digest == digest => return Ok(Json(IdResponse { id })),
            Some(_) => {
                return Err(ApiError::conflict(
                    "idempotencyKey was already used for a different source; use a new key",
                )
                .with_detail("field", "idempotencyKey"));
            }
            None => {
                receipts.push(SourceReceipt {
                    key: key.clone(),
                    digest,
                });
                let excess = receipts.len().saturating_sub(MAX_SOURCE_RECEIPTS);
                receipts.drain(..excess);
            }
        }
    }
    let mut desired = Resource::new(&id, resource.spec.clone());
    desired.spec.source = Some(source_descriptor(body.source));
    if !receipts.is_empty() {
        desired.annotations_mut().insert(
            SOURCE_IDEMPOTENCY_ANNOTATION.into(),
            serde_json::to_string(&receipts).map_err(ApiError::internal)?,
        );
    }
    save_object(&state, &caller, &resource, desired).await?;
    Ok(Json(IdResponse { id }))
}

/// The policy as the API reports it; enabled for another source binding means blocked.
pub fn auto_deploy_result(resource: &Resource) -> AutoDeployResult {
    let policy = &resource.spec.auto_deploy;
    let blocked = policy.blocked(resource.spec.source.as_ref());
    AutoDeployResult {
        resource_id: resource.name_any(),
        status: match (policy.enabled, blocked) {
            (false, _) => "disabled",
            (true, false) => "enabled",
            (true, true) => "blocked",
        }
        .into(),
        trigger_kind: policy.trigger_kind.clone(),
        refs: policy.refs.clone(),
        event_kinds: policy.event_kinds.clone(),
        source_binding_fingerprint: policy.source_binding_fingerprint.clone(),
        blocked_reason: blocked.then(|| "source-binding-changed".into()),
        webhook_secret: None,
    }
}

fn text_list(field: &str, values: &[String]) -> ApiResult<()> {
    for (index, value) in values.iter().enumerate() {
        bounded(&format!("{field}[{index}]"), value, 253)?;
    }
    Ok(())
}

async fn auto_deploy(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<SetAutoDeploy>,
) -> ApiResult<Json<AutoDeployResult>> {
    let resource = for_write(&state, &caller, &id)?;
    let mut spec = resource.spec.clone();
    let policy = &mut spec.auto_deploy;
    match body.mode.as_str() {
        "enable" => {
            let Some(source) = &resource.spec.source else {
                return Err(ApiError::conflict(
                    "the resource has no source; bind one with POST /resources/{id}/source first",
                )
                .with_detail("field", "mode"));
            };
            if let Some(kind) = &body.trigger_kind {
                one_of("triggerKind", kind, &[GIT_PUSH])?;
                policy.trigger_kind = kind.clone();
            }
            if let Some(refs) = body.refs {
                text_list("refs", &refs)?;
                for (index, git_ref) in refs.iter().enumerate() {
                    full_ref(&format!("refs[{index}]"), git_ref)?;
                }
                policy.refs = refs;
            }
            match body.event_kinds {
                Some(kinds) => {
                    for (index, kind) in kinds.iter().enumerate() {
                        one_of(&format!("eventKinds[{index}]"), kind, &["push", "tag"])?;
                    }
                    policy.event_kinds = kinds;
                }
                None if policy.event_kinds.is_empty() => policy.event_kinds = vec!["push".into()],
                None => {}
            }
            policy.enabled = true;
            policy.source_binding_fingerprint = Some(source_binding_fingerprint(source));
        }
        "disable" => {
            policy.enabled = false;
            policy.source_binding_fingerprint = None;
        }
        _ => {
            return Err(
                ApiError::validation("mode", "mode must be one of: enable, disable")
                    .with_detail("allowed", vec!["enable", "disable"]),
            );
        }
    }
    let rotate = body.rotate_webhook_secret.unwrap_or(false);
    if rotate && body.mode != "enable" {
        return Err(ApiError::validation(
            "rotateWebhookSecret",
            "rotateWebhookSecret goes with mode enable",
        ));
    }
    let written = if spec == resource.spec {
        (*resource).clone()
    } else {
        save(&state, &caller, &resource, spec).await?
    };
    let mut result = auto_deploy_result(&written);
    if body.mode == "enable" && is_git(&written) {
        result.webhook_secret = webhook_secret::ensure(&state, &written, rotate).await?;
    }
    Ok(Json(result))
}

fn is_git(resource: &Resource) -> bool {
    let kind = resource.spec.source.as_ref().map(|s| s.kind.as_str());
    kind.is_some_and(|kind| SourceKind::parse("source.kind", kind).is_ok_and(SourceKind::is_git))
}

fn one_of(field: &str, value: &str, allowed: &[&str]) -> ApiResult<()> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(ApiError::from(berth_api::validate::FieldError::not_one_of(
        field, allowed,
    )))
}

/// A ref as a push names it: `refs/heads/main`, `refs/tags/v*` (`*` matches any run).
fn full_ref(field: &str, git_ref: &str) -> ApiResult<()> {
    let name = git_ref.replace('*', "x");
    berth_api::build::check_git_ref(field, &name)?;
    if !git_ref.starts_with("refs/") {
        return Err(ApiError::validation(
            field,
            format!("{field} must be a full ref such as refs/heads/main or refs/tags/v*"),
        ));
    }
    Ok(())
}

async fn show_auto_deploy(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<AutoDeployResult>> {
    known_params(&query, &[])?;
    let resource = lookup(&state, &caller, &id)?;
    Ok(Json(auto_deploy_result(&resource)))
}
