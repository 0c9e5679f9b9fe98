//! Backup policies over REST: Appaloft's `POST|GET /dependency-resources/backup-policies` and
//! `GET /dependency-resources/backup-policies/{policyId}`. A policy is a
//! DependencyResourceBackupPolicy the controller runs: a backup at each slot, proven by a test
//! restore, and the backups its rules no longer keep pruned with their artifacts. Reads come
//! from the watch caches.

use axum::extract::{Path, State};
use axum::http::StatusCode;

use berth_api::backup_policies::{
    BackupPolicyList, BackupPolicyShow, ConfigureBackupPolicy, LIST_SCHEMA, SHOW_SCHEMA,
};
use berth_api::common::IdResponse;
use berth_crds::backup::DEPENDENCY_LABEL;
use berth_crds::backup_policy::DependencyResourceBackupPolicy;
use berth_crds::member::OrganizationRole;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::backup_policies::{configured_spec, summary};
use crate::domain::backups::{choose_target, require_backup_kind};
use crate::domain::dependency_resources::lookup as lookup_dependency;
use crate::domain::objects::{all_in, find_in};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<ConfigureBackupPolicy, IdResponse, _, _>(
            "/dependency-resources/backup-policies",
            "Create a managed PostgreSQL's or Redis's backup policy (201), or change it in the fields given \
             (200; policyId, else the dependency's own): backups every scheduleIntervalHours or \
             on a cron schedule, each proven by a test restore, kept by retentionDays, keepLast, \
             keepDaily and keepWeekly (no rule: the newest 7), the rest pruned at the target",
            configure,
        )
        .success(&[StatusCode::OK, StatusCode::CREATED]),
        Endpoint::get::<BackupPolicyList, _, _>(
            "/dependency-resources/backup-policies",
            "List backup policies (dependencyResourceId, enabledOnly filters) with their next \
             run and newest proven restore point",
            list,
        ),
        Endpoint::get::<BackupPolicyShow, _, _>(
            "/dependency-resources/backup-policies/{policyId}",
            "Show a backup policy",
            show,
        ),
    ]
}

async fn configure(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ConfigureBackupPolicy>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    let dependency_id = &body.dependency_resource_id;
    let dependency = lookup_dependency(&state, &caller, dependency_id)
        .map_err(|error| error.with_detail("field", "dependencyResourceId"))?;
    require_backup_kind(&dependency, body.provider_key.as_deref())?;
    let namespace = organization.namespace.clone();
    let existing = existing_policy(&state, &namespace, &body)?;
    if existing.is_none() {
        body.check_new()?;
    }
    let targets = all_in(&state.caches.backup_targets, &namespace);
    let target_id = match (&body.target_id, &existing) {
        (None, Some(policy)) => policy.spec.target_id.clone(),
        (named, _) => choose_target(&targets, named.as_deref())?.name_any(),
    };
    let spec = configured_spec(&body, existing.as_ref().map(|p| &p.spec), target_id);
    let (id, code) = match &existing {
        Some(policy) => (policy.name_any(), StatusCode::OK),
        None => (new_id(&format!("{dependency_id}-bp")), StatusCode::CREATED),
    };
    let mut policy = DependencyResourceBackupPolicy::new(&id, spec);
    policy
        .labels_mut()
        .insert(DEPENDENCY_LABEL.into(), dependency_id.clone());
    let api = Api::<DependencyResourceBackupPolicy>::namespaced(state.client.clone(), &namespace);
    apply(&api, &state.caches.backup_policies, Some(&caller), policy).await?;
    tracing::info!(policy = %id, dependency = %dependency_id, "backup policy configured");
    Ok((code, Json(IdResponse { id })))
}

/// The policy `body` changes: the one it names (which must be of its dependency), else the
/// dependency's own, if it has one.
fn existing_policy(
    state: &AppState,
    namespace: &str,
    body: &ConfigureBackupPolicy,
) -> ApiResult<Option<DependencyResourceBackupPolicy>> {
    let dependency_id = &body.dependency_resource_id;
    let Some(policy_id) = &body.policy_id else {
        let policies = all_in(&state.caches.backup_policies, namespace);
        let own = policies
            .iter()
            .filter(|p| &p.spec.dependency_resource_id == dependency_id)
            .min_by_key(|p| {
                (
                    p.metadata.creation_timestamp.clone().map(|t| t.0),
                    p.name_any(),
                )
            });
        return Ok(own.map(|p| p.as_ref().clone()));
    };
    let policy = find_in(
        &state.caches.backup_policies,
        namespace,
        policy_id,
        "backup policy",
    )
    .map_err(|error| error.with_detail("field", "policyId"))?;
    if &policy.spec.dependency_resource_id != dependency_id {
        return Err(ApiError::validation(
            "dependencyResourceId",
            format!(
                "policy {policy_id} backs up {}, not {dependency_id}",
                policy.spec.dependency_resource_id
            ),
        ));
    }
    Ok(Some(policy.as_ref().clone()))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<BackupPolicyList>> {
    known_params(&query, &["dependencyResourceId", "enabledOnly"])?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let dependency = query.string("dependencyResourceId")?;
    let enabled_only = query.boolean_or("enabledOnly", false)?;
    let mut items: Vec<_> = all_in(&state.caches.backup_policies, &organization.namespace)
        .iter()
        .filter(|p| dependency.is_none_or(|d| p.spec.dependency_resource_id == d))
        .filter(|p| !enabled_only || p.spec.rules.enabled)
        .filter_map(|p| {
            let dependency = lookup_dependency(&state, &caller, &p.spec.dependency_resource_id);
            dependency.ok().map(|d| summary(p, &d))
        })
        .collect();
    items.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(Json(BackupPolicyList {
        schema_version: LIST_SCHEMA.into(),
        items,
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(policy_id): Path<String>,
) -> ApiResult<Json<BackupPolicyShow>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let policy = find_in(
        &state.caches.backup_policies,
        &organization.namespace,
        &policy_id,
        "backup policy",
    )?;
    // A policy of a dependency the caller cannot see looks like a missing one.
    let dependency = lookup_dependency(&state, &caller, &policy.spec.dependency_resource_id)
        .map_err(|_| ApiError::not_found("backup policy", &policy_id))?;
    Ok(Json(BackupPolicyShow {
        schema_version: SHOW_SCHEMA.into(),
        policy: summary(&policy, &dependency),
    }))
}
