//! `GET /resources/{resourceId}` (`resources.show/v1`): the whole resource from the caches —
//! its spec, what the controller reported in its status, and its latest attempt.

use axum::extract::{Path, State};
use berth_api::deployment_records::SourceCommit;
use berth_api::resource_detail::{
    AutoDeploySummary, HealthPolicy, HttpCheck, LatestDeployment, ProfileDiagnostic,
    ResourceDetail, ResourceIdentity, ResourceLifecycle, RuntimeSummary, SHOW_SCHEMA_VERSION,
    SourceProfile, StorageAttachmentSummary,
};
use berth_api::resource_input::{HealthCheckKind, RuntimeProfileInput};
use berth_crds::resource::{Resource, source_binding_fingerprint};
use berth_crds::runtime_control::DesiredRuntimeState;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::auth::Caller;
use crate::domain::deployments::{attempt_state, source_commit};
use crate::domain::objects::find_in;
use crate::domain::resource_access::{archived, lookup};
use crate::domain::time::{created_at, timestamp};
use crate::error::ApiResult;
use crate::json::Json;
use crate::state::AppState;

pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ResourceDetail>> {
    let resource = lookup(&state, &caller, &id)?;
    Ok(Json(detail(&state, &resource)))
}

fn wire<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn source(resource: &Resource) -> Option<SourceProfile> {
    let source = resource.spec.source.as_ref()?;
    let image = (source.kind == "docker-image").then(|| {
        // `name:tag`, the tag after the last `:` that follows the last `/`.
        let last = source.locator.rsplit('/').next().unwrap_or_default();
        match last.rsplit_once(':') {
            Some((_, tag)) => {
                let name = &source.locator[..source.locator.len() - tag.len() - 1];
                (name.to_string(), Some(tag.to_string()))
            }
            None => (source.locator.clone(), None),
        }
    });
    Some(SourceProfile {
        kind: source.kind.clone(),
        locator: source.locator.clone(),
        display_name: source
            .display_name
            .clone()
            .unwrap_or_else(|| source.locator.clone()),
        source_binding_fingerprint: source_binding_fingerprint(source),
        git_ref: source.git_ref.clone(),
        commit_sha: source.commit_sha.clone(),
        base_directory: source.base_directory.clone(),
        image_name: image.as_ref().map(|(name, _)| name.clone()),
        image_tag: image.and_then(|(_, tag)| tag),
        metadata: source.metadata.clone(),
    })
}

fn auto_deploy(resource: &Resource) -> AutoDeploySummary {
    let policy = &resource.spec.auto_deploy;
    let blocked = policy.blocked(resource.spec.source.as_ref());
    AutoDeploySummary {
        status: match (policy.enabled, blocked) {
            (true, true) => "blocked",
            (true, false) => "enabled",
            (false, _) => "disabled",
        }
        .into(),
        trigger_kind: policy.trigger_kind.clone(),
        refs: policy.refs.clone(),
        event_kinds: policy.event_kinds.clone(),
        source_binding_fingerprint: policy
            .source_binding_fingerprint
            .clone()
            .or_else(|| {
                resource
                    .spec
                    .source
                    .as_ref()
                    .map(source_binding_fingerprint)
            })
            .unwrap_or_default(),
        blocked_reason: blocked.then(|| "source-binding-changed".into()),
        updated_at: policy_updated_at(resource),
    }
}

/// When the controller saw the policy become what it is now. In the moment before it has seen
/// a change, the latest write of a field manager that holds `spec.autoDeploy` (the API
/// server's record); the creation when none does.
fn policy_updated_at(resource: &Resource) -> String {
    let seen = resource
        .status
        .as_ref()
        .and_then(|s| s.auto_deploy.as_ref());
    let current = resource.spec.auto_deploy.fingerprint();
    if let Some(seen) = seen.filter(|seen| seen.policy_fingerprint == current) {
        return timestamp(&seen.updated_at);
    }
    let writers = resource.metadata.managed_fields.iter().flatten();
    let written = writers
        .filter(|entry| {
            let fields = entry.fields_v1.as_ref();
            fields.is_some_and(|f| f.0.pointer("/f:spec/f:autoDeploy").is_some())
        })
        .filter_map(|entry| entry.time.as_ref())
        .max_by_key(|time| time.0);
    written
        .map(timestamp)
        .unwrap_or_else(|| created_at(&resource.metadata))
}

fn runtime_profile(resource: &Resource) -> Option<RuntimeProfileInput> {
    let profile = resource.spec.runtime_profile.as_ref()?;
    Some(RuntimeProfileInput {
        strategy: profile.strategy,
        install_command: profile.install_command.clone(),
        build_command: profile.build_command.clone(),
        start_command: profile.start_command.clone(),
        publish_directory: profile.publish_directory.clone(),
        base_image: profile.base_image.clone(),
        dockerfile_path: profile.dockerfile_path.clone(),
        build_target: profile.build_target.clone(),
        docker_compose_file_path: profile.docker_compose_file_path.clone(),
        health_check: None,
        restart_policy: Some(profile.restart_policy),
    })
}

fn health_policy(resource: &Resource) -> Option<HealthPolicy> {
    let check = resource
        .spec
        .runtime_profile
        .as_ref()
        .and_then(|p| p.health_check.as_ref())?;
    let command = check.kind == HealthCheckKind::Command;
    Some(HealthPolicy {
        enabled: true,
        kind: if command { "command" } else { "http" }.into(),
        command: check.command.clone(),
        interval_seconds: check.interval_seconds.into(),
        timeout_seconds: check.timeout_seconds.into(),
        retries: check.retries.into(),
        start_period_seconds: check.start_period_seconds.into(),
        http: (!command).then(|| HttpCheck {
            method: "GET".into(),
            scheme: "http".into(),
            host: "localhost".into(),
            port: check.port.map(i64::from).or_else(|| {
                resource
                    .spec
                    .network_profile
                    .as_ref()
                    .map(|n| n.internal_port)
            }),
            path: check.path.clone(),
            expected_status_code: check.expected_status_code.into(),
        }),
    })
}

/// The attachments with the name and kind of the volume each mounts (left out for an id no
/// StorageVolume has).
fn storage_attachments(state: &AppState, resource: &Resource) -> Vec<StorageAttachmentSummary> {
    let namespace = resource.namespace().unwrap_or_default();
    resource
        .spec
        .storage_attachments
        .iter()
        .map(|a| {
            let volume = find_in(
                &state.caches.storage_volumes,
                &namespace,
                &a.storage_volume_id,
                "storage volume",
            )
            .ok();
            StorageAttachmentSummary {
                id: a.attachment_id.clone(),
                storage_volume_id: a.storage_volume_id.clone(),
                storage_volume_name: volume.as_ref().map(|v| v.spec.name.clone()),
                storage_volume_kind: volume.map(|v| v.spec.kind.as_str().to_string()),
                destination_path: a.destination_path.clone(),
                mount_mode: "read-write".into(),
                attached_at: crate::domain::storage_volumes::attached_at(resource, a),
            }
        })
        .collect()
}

fn latest_deployment(state: &AppState, resource: &Resource) -> Option<LatestDeployment> {
    let namespace = resource.namespace().unwrap_or_default();
    let id = resource.status.as_ref()?.last_deployment_id.clone()?;
    let found = find_in(&state.caches.deployments, &namespace, &id, "deployment").ok()?;
    let status = found.status.clone().unwrap_or_default();
    Some(LatestDeployment {
        id,
        status: attempt_state(&found),
        created_at: created_at(&found.metadata),
        started_at: status.started_at.as_ref().map(timestamp),
        finished_at: status.finished_at.as_ref().map(timestamp),
        server_id: Some(found.spec.server_id.clone()),
        destination_id: found.spec.destination_id.clone(),
    })
}

/// The commit of the attempt that serves the resource.
fn deployed_commit(state: &AppState, resource: &Resource) -> Option<SourceCommit> {
    let namespace = resource.namespace().unwrap_or_default();
    let serving = resource
        .status
        .as_ref()?
        .last_route_realization_deployment_id
        .as_ref()?;
    let found = find_in(&state.caches.deployments, &namespace, serving, "deployment").ok()?;
    source_commit(&found)
}

fn runtime(resource: &Resource) -> Option<RuntimeSummary> {
    let observed = resource.status.as_ref()?.runtime.as_ref()?;
    let desired = resource.spec.runtime_wish().desired_state;
    Some(RuntimeSummary {
        lifecycle: wire(&observed.lifecycle),
        health: wire(&observed.health),
        observed_at: timestamp(&observed.observed_at),
        deployment_id: observed.deployment_id.clone(),
        reason_code: observed.reason_code.clone(),
        message: observed.message.clone(),
        desired_state: match desired {
            DesiredRuntimeState::Stopped => "stopped",
            _ => "running",
        }
        .into(),
    })
}

/// Hints about profiles that keep the resource from deploying as it is.
fn diagnostics(resource: &Resource) -> Vec<ProfileDiagnostic> {
    let mut found = Vec::new();
    if resource.spec.source.is_none() {
        found.push(ProfileDiagnostic {
            code: "source_missing".into(),
            severity: "blocking".into(),
            message: "no source: bind one with POST /resources/{id}/source".into(),
            section: Some("source".into()),
        });
    }
    if resource.spec.server_id.is_none() {
        found.push(ProfileDiagnostic {
            code: "server_missing".into(),
            severity: "blocking".into(),
            message: "no server: deployments need the resource's serverId".into(),
            section: Some("runtime".into()),
        });
    }
    found
}

/// The record of `resource`.
pub fn detail(state: &AppState, resource: &Resource) -> ResourceDetail {
    let spec = &resource.spec;
    let status = resource.status.clone().unwrap_or_default();
    let lifecycle = archived(state, resource);
    ResourceDetail {
        schema_version: SHOW_SCHEMA_VERSION.into(),
        resource: ResourceIdentity {
            id: resource.name_any(),
            project_id: spec.project_id.clone(),
            environment_id: spec.environment_id.clone(),
            destination_id: spec.destination_id.clone(),
            server_id: spec.server_id.clone(),
            name: spec.name.clone(),
            slug: resource.host_slug(),
            kind: spec.kind,
            description: spec.description.clone(),
            created_at: created_at(&resource.metadata),
            services: spec.services.clone(),
            deployment_count: status.deployment_count,
            last_deployment_id: status.last_deployment_id.clone(),
            last_deployment_status: status.last_deployment_status,
        },
        source: source(resource),
        auto_deploy_policy: auto_deploy(resource),
        runtime_profile: runtime_profile(resource),
        network_profile: spec.network_profile.clone(),
        access_profile: spec.access_profile.clone(),
        health_policy: health_policy(resource),
        storage_attachments: storage_attachments(state, resource),
        access_summary: status.access_summary.clone(),
        proxy_route_status: status.proxy_route_status,
        latest_deployment: latest_deployment(state, resource),
        deployed_commit: deployed_commit(state, resource),
        deployed_state: status.deployed_state.clone(),
        runtime: runtime(resource),
        lifecycle: ResourceLifecycle {
            status: if lifecycle.is_some() {
                "archived"
            } else {
                "active"
            }
            .into(),
            archived_at: lifecycle.as_ref().and_then(|l| l.archived_at.clone()),
            archive_reason: lifecycle.and_then(|l| l.reason),
        },
        diagnostics: diagnostics(resource),
        generated_at: Timestamp::now().to_string(),
    }
}
