//! Storage volume backup policies over REST: Appaloft's `POST|GET
//! /storage-volumes/backup-policies` and `GET /storage-volumes/backup-policies/{policyId}`. A
//! policy is a StorageVolumeBackupPolicy the controller runs: a volume backup at each slot,
//! proven by extracting it into a throwaway volume, and the backups its rules no longer keep
//! pruned with their artifacts. Reads come from the watch caches.

use axum::extract::{Path, State};
use axum::http::StatusCode;

use berth_api::common::IdResponse;
use berth_api::volume_backup_policies::{
    ConfigureStorageVolumeBackupPolicy, LIST_SCHEMA, SHOW_SCHEMA, StorageVolumeBackupPolicyList,
    StorageVolumeBackupPolicyShow,
};
use berth_crds::backup_policy::StorageVolumeBackupPolicy;
use berth_crds::member::OrganizationRole;
use berth_crds::volume_backup::STORAGE_VOLUME_LABEL;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::backups::choose_target;
use crate::domain::objects::{all_in, find_in};
use crate::domain::servers;
use crate::domain::storage_volumes::lookup as lookup_volume;
use crate::domain::volume_backup_policies::{Placement, configured_spec, summary};
use crate::domain::volume_backups::default_server;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<ConfigureStorageVolumeBackupPolicy, IdResponse, _, _>(
            "/storage-volumes/backup-policies",
            "Create a storage volume's backup policy (201), or change it in the fields given \
             (200; policyId, else the volume's own): backups of its files on one server \
             (serverId, else the server of a resource attaching it) every \
             scheduleIntervalHours or on a cron schedule, crash-consistent or quiesced, each \
             proven by extracting it into a throwaway volume, kept by retentionDays, keepLast, \
             keepDaily and keepWeekly (no rule: the newest 7), the rest pruned at the target",
            configure,
        )
        .success(&[StatusCode::OK, StatusCode::CREATED]),
        Endpoint::get::<StorageVolumeBackupPolicyList, _, _>(
            "/storage-volumes/backup-policies",
            "List storage volume backup policies (storageVolumeId, enabledOnly filters) with \
             their next run and newest proven restore point",
            list,
        ),
        Endpoint::get::<StorageVolumeBackupPolicyShow, _, _>(
            "/storage-volumes/backup-policies/{policyId}",
            "Show a storage volume backup policy",
            show,
        ),
    ]
}

async fn configure(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ConfigureStorageVolumeBackupPolicy>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let volume_id = &body.storage_volume_id;
    let volume = lookup_volume(&state, &caller, volume_id)
        .map_err(|error| error.with_detail("field", "storageVolumeId"))?;
    let namespace = organization.namespace.clone();
    let existing = existing_policy(&state, &namespace, &body)?;
    if existing.is_none() {
        body.timing().check_new()?;
    }
    let server_id = match (&body.server_id, &existing) {
        (Some(id), _) => id.clone(),
        (None, Some(policy)) => policy.spec.server_id.clone(),
        (None, None) => default_server(&volume, &all_in(&state.caches.resources, &namespace))?,
    };
    servers::lookup(&state, &caller, &server_id)
        .map_err(|error| error.with_detail("field", "serverId"))?;
    let targets = all_in(&state.caches.backup_targets, &namespace);
    let target_id = match (&body.target_id, &existing) {
        (None, Some(policy)) => policy.spec.target_id.clone(),
        (named, _) => choose_target(&targets, named.as_deref())?.name_any(),
    };
    let placement = Placement {
        server_id,
        target_id,
    };
    let spec = configured_spec(&body, existing.as_ref().map(|p| &p.spec), placement);
    let (id, code) = match &existing {
        Some(policy) => (policy.name_any(), StatusCode::OK),
        None => (new_id(&format!("{volume_id}-vp")), StatusCode::CREATED),
    };
    let mut policy = StorageVolumeBackupPolicy::new(&id, spec);
    policy
        .labels_mut()
        .insert(STORAGE_VOLUME_LABEL.into(), volume_id.clone());
    let api = Api::<StorageVolumeBackupPolicy>::namespaced(state.client.clone(), &namespace);
    apply(
        &api,
        &state.caches.volume_backup_policies,
        Some(&caller),
        policy,
    )
    .await?;
    tracing::info!(policy = %id, volume = %volume_id, "volume backup policy configured");
    Ok((code, Json(IdResponse { id })))
}

/// The policy `body` changes: the one it names (which must be of its volume), else the
/// volume's own, if it has one.
fn existing_policy(
    state: &AppState,
    namespace: &str,
    body: &ConfigureStorageVolumeBackupPolicy,
) -> ApiResult<Option<StorageVolumeBackupPolicy>> {
    let volume_id = &body.storage_volume_id;
    let Some(policy_id) = &body.policy_id else {
        let policies = all_in(&state.caches.volume_backup_policies, namespace);
        let own = policies
            .iter()
            .filter(|p| &p.spec.storage_volume_id == volume_id)
            .min_by_key(|p| {
                (
                    p.metadata.creation_timestamp.clone().map(|t| t.0),
                    p.name_any(),
                )
            });
        return Ok(own.map(|p| p.as_ref().clone()));
    };
    let policy = find_in(
        &state.caches.volume_backup_policies,
        namespace,
        policy_id,
        "storage volume backup policy",
    )
    .map_err(|error| error.with_detail("field", "policyId"))?;
    if &policy.spec.storage_volume_id != volume_id {
        return Err(ApiError::validation(
            "storageVolumeId",
            format!(
                "policy {policy_id} backs up {}, not {volume_id}",
                policy.spec.storage_volume_id
            ),
        ));
    }
    Ok(Some(policy.as_ref().clone()))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<StorageVolumeBackupPolicyList>> {
    known_params(&query, &["storageVolumeId", "enabledOnly"])?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let volume = query.string("storageVolumeId")?;
    let enabled_only = query.boolean_or("enabledOnly", false)?;
    let mut items: Vec<_> = all_in(
        &state.caches.volume_backup_policies,
        &organization.namespace,
    )
    .iter()
    .filter(|p| volume.is_none_or(|v| p.spec.storage_volume_id == v))
    .filter(|p| !enabled_only || p.spec.rules.enabled)
    // A policy of a volume the caller cannot see is left out.
    .filter(|p| lookup_volume(&state, &caller, &p.spec.storage_volume_id).is_ok())
    .map(|p| summary(p))
    .collect();
    items.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(Json(StorageVolumeBackupPolicyList {
        schema_version: LIST_SCHEMA.into(),
        items,
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(policy_id): Path<String>,
) -> ApiResult<Json<StorageVolumeBackupPolicyShow>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let policy = find_in(
        &state.caches.volume_backup_policies,
        &organization.namespace,
        &policy_id,
        "storage volume backup policy",
    )?;
    // A policy of a volume the caller cannot see looks like a missing one.
    lookup_volume(&state, &caller, &policy.spec.storage_volume_id)
        .map_err(|_| ApiError::not_found("storage volume backup policy", &policy_id))?;
    Ok(Json(StorageVolumeBackupPolicyShow {
        schema_version: SHOW_SCHEMA.into(),
        policy: summary(&policy),
    }))
}
