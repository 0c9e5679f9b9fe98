//! Spec §4.5 retention defaults: `GET`/`POST /retention-defaults` and
//! `GET /retention-defaults/{category}`. Each is a RetentionPolicy object: a system default
//! (one per category, in the system namespace; berth-controller creates any missing) or an
//! organization's own (in its namespace), named after its category. Writing one executes
//! nothing: berth-controller runs enabled policies on a schedule, counting what would go when
//! only `dryRunSchedulingEnabled` is on and deleting when `destructiveSchedulingEnabled` is.

use axum::extract::{Path, State};
use berth_crds::member::OrganizationRole;
use berth_crds::retention_policy::{
    RetentionCategory, RetentionPolicy, RetentionPolicySpec, RetentionScope,
};
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, CallerOrganization, Principal};
use crate::domain::accounts::FIRST_ADMIN_LABEL;
use crate::domain::objects::find_in;
use crate::domain::retention::policies_of;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::write;

pub use berth_api::retention::{
    LIST_SCHEMA_VERSION, POLICY_SCHEMA_VERSION, PolicyRecord, RetentionAnswer, RetentionList,
    RetentionShow, SHOW_SCHEMA_VERSION, SetRetention,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<RetentionList, _, _>(
            "/retention-defaults",
            "Retention policies: the system defaults and the organization's own (query: scope \
             organization or system, organizationId, category, enabledOnly)",
            list,
        ),
        Endpoint::post::<SetRetention, RetentionAnswer, _, _>(
            "/retention-defaults",
            "Create or change the retention policy of a category (organization scope: admins \
             and organization-wide deploy tokens; system scope: the first administrator); \
             configuration only, it executes nothing",
            set,
        ),
        Endpoint::get::<RetentionShow, _, _>(
            "/retention-defaults/{category}",
            "The retention policy of a category (query: scope, default system; organizationId)",
            show,
        ),
    ]
}

/// Longest retention, a hundred years.
pub const MAX_DAYS: i64 = 36_500;
const SCOPES: [&str; 2] = ["organization", "system"];

fn scope_name(scope: RetentionScope) -> &'static str {
    match scope {
        RetentionScope::Organization => "organization",
        RetentionScope::System => "system",
    }
}

fn parse_scope(value: &str) -> RetentionScope {
    if value == "system" {
        RetentionScope::System
    } else {
        RetentionScope::Organization
    }
}

fn category_names() -> Vec<&'static str> {
    RetentionCategory::ALL.iter().map(|c| c.as_str()).collect()
}

fn parse_category(field: &str, value: &str) -> ApiResult<RetentionCategory> {
    RetentionCategory::parse(value).ok_or_else(|| {
        ApiError::validation(
            field,
            format!("{field} must be one of: {}", category_names().join(", ")),
        )
        .with_detail("allowed", category_names())
    })
}

/// `organizationId`, if given, must be the caller's organization.
fn check_organization(
    organization: &CallerOrganization,
    scope: RetentionScope,
    given: Option<&str>,
) -> ApiResult<()> {
    match given {
        Some(_) if scope == RetentionScope::System => Err(ApiError::validation(
            "organizationId",
            "organizationId applies to scope organization only",
        )),
        Some(id) if id != organization.id => Err(ApiError::not_found("organization", id)),
        _ => Ok(()),
    }
}

/// The namespace that holds the policies of `scope`.
fn namespace_of(
    state: &AppState,
    organization: &CallerOrganization,
    scope: RetentionScope,
) -> String {
    match scope {
        RetentionScope::System => state.config.system_namespace.clone(),
        RetentionScope::Organization => organization.namespace.clone(),
    }
}

fn record(policy: &RetentionPolicy, organization: &CallerOrganization) -> PolicyRecord {
    let spec = &policy.spec;
    let status = policy.status.clone().unwrap_or_default();
    let annotations = policy.annotations();
    let actor = |annotation: &str, recorded: Option<String>, otherwise: &str| {
        annotations
            .get(annotation)
            .cloned()
            .or(recorded)
            .unwrap_or_else(|| otherwise.to_string())
    };
    let system = spec.scope == RetentionScope::System;
    let owner = if system { "berth" } else { "unknown" };
    let kind = if system { "system" } else { "unknown" };
    let actor_id = actor(
        UPDATED_BY_ID,
        status.change.updated_by_actor_id.clone(),
        owner,
    );
    let id_prefix = if system {
        "system"
    } else {
        organization.id.as_str()
    };
    PolicyRecord {
        schema_version: POLICY_SCHEMA_VERSION.into(),
        id: format!("{id_prefix}.{}", spec.category.as_str()),
        scope: scope_name(spec.scope).into(),
        organization_id: (!system).then(|| organization.id.clone()),
        category: spec.category.as_str().into(),
        retention_days: spec.retention_days,
        dry_run_scheduling_enabled: spec.dry_run_scheduling_enabled,
        destructive_scheduling_enabled: spec.destructive_scheduling_enabled,
        enabled: spec.enabled,
        updated_at: status
            .change
            .updated_at
            .as_ref()
            .or(policy.metadata.creation_timestamp.as_ref())
            .map(timestamp)
            .unwrap_or_default(),
        updated_by_actor_kind: berth_api::thresholds::actor_kind(
            &actor(UPDATED_BY_KIND, status.change.updated_by_actor_kind, kind),
            &actor_id,
        )
        .into(),
        updated_by_actor_id: actor_id,
        last_run: status
            .last_run
            .map(|run| run.with_instants(|at| timestamp(&at))),
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<RetentionList>> {
    known_params(
        &query,
        &["scope", "organizationId", "category", "enabledOnly"],
    )?;
    let scope = query.one_of("scope", &SCOPES, None)?.map(parse_scope);
    let category = match query.string("category")? {
        Some(value) => Some(parse_category("category", value)?),
        None => None,
    };
    let enabled_only = query.boolean("enabledOnly")?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let organization_id = query.string("organizationId")?;
    check_organization(organization, scope.unwrap_or_default(), organization_id)?;
    let scopes = match scope {
        Some(scope) => vec![scope],
        None => vec![RetentionScope::System, RetentionScope::Organization],
    };
    let items = scopes
        .into_iter()
        .flat_map(|scope| policies_of(&state, &namespace_of(&state, organization, scope)))
        .filter(|p| category.is_none_or(|c| p.spec.category == c))
        .filter(|p| !enabled_only || p.spec.enabled)
        .map(|p| record(&p, organization))
        .collect();
    Ok(Json(RetentionList {
        schema_version: LIST_SCHEMA_VERSION.into(),
        items,
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(category): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<RetentionShow>> {
    known_params(&query, &["scope", "organizationId"])?;
    let category = parse_category("category", &category)?;
    let scope = parse_scope(
        query
            .one_of("scope", &SCOPES, Some("system"))?
            .unwrap_or("system"),
    );
    let organization = caller.require_role(OrganizationRole::Member)?;
    check_organization(organization, scope, query.string("organizationId")?)?;
    let namespace = namespace_of(&state, organization, scope);
    let what = match scope {
        RetentionScope::System => "system retention default",
        RetentionScope::Organization => {
            "organization retention policy (the system default applies)"
        }
    };
    let policy = find_in(
        &state.caches.retention_policies,
        &namespace,
        category.as_str(),
        what,
    )?;
    Ok(Json(RetentionShow {
        schema_version: SHOW_SCHEMA_VERSION.into(),
        policy: record(&policy, organization),
    }))
}

/// Only the first administrator (who runs the installation) changes the system defaults.
fn require_platform_admin(state: &AppState, caller: &Caller) -> ApiResult<()> {
    let refused = || {
        ApiError::forbidden("only the first administrator can change the system retention defaults")
    };
    let Principal::User { user_id, .. } = &caller.principal else {
        return Err(refused());
    };
    let is_first_admin = state
        .caches
        .users
        .state()
        .iter()
        .any(|u| u.name_any() == *user_id && u.labels().contains_key(FIRST_ADMIN_LABEL));
    if is_first_admin {
        Ok(())
    } else {
        Err(refused())
    }
}

/// Who may write an organization's policies: its admins, and its deploy tokens that are not
/// limited to part of it (retention is organization-wide automation).
fn require_writer(caller: &Caller) -> ApiResult<&CallerOrganization> {
    match &caller.principal {
        Principal::DeployToken { .. } if !caller.is_limited() => caller.organization(),
        Principal::DeployToken { .. } => Err(ApiError::forbidden(
            "a deploy token limited to part of the organization cannot change its retention",
        )),
        Principal::User { .. } | Principal::Migration { .. } => {
            caller.require_role(OrganizationRole::Admin)
        }
    }
}

/// The body, checked; every error names its field.
fn checked(body: &SetRetention) -> ApiResult<(RetentionCategory, RetentionScope)> {
    let category = parse_category("category", &body.category)?;
    if !(1..=MAX_DAYS).contains(&body.retention_days) {
        return Err(ApiError::validation(
            "retentionDays",
            format!("retentionDays must be an integer from 1 to {MAX_DAYS}"),
        ));
    }
    let scope = match body.scope.as_deref() {
        None => RetentionScope::Organization,
        Some(value) if SCOPES.contains(&value) => parse_scope(value),
        Some(_) => {
            return Err(
                ApiError::validation("scope", "scope must be organization or system")
                    .with_detail("allowed", SCOPES),
            );
        }
    };
    Ok((category, scope))
}

async fn set(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<SetRetention>,
) -> ApiResult<Json<RetentionAnswer>> {
    let (category, scope) = checked(&body)?;
    let organization = require_writer(&caller)?.clone();
    check_organization(&organization, scope, body.organization_id.as_deref())?;
    if scope == RetentionScope::System {
        require_platform_admin(&state, &caller)?;
    }
    let namespace = namespace_of(&state, &organization, scope);
    let current = find_in(
        &state.caches.retention_policies,
        &namespace,
        category.as_str(),
        "retention policy",
    )
    .ok()
    .map(|p| p.spec.clone());
    let keep =
        |given: Option<bool>, current: Option<bool>, new: bool| given.or(current).unwrap_or(new);
    let spec = RetentionPolicySpec {
        scope,
        organization_id: (scope == RetentionScope::Organization).then(|| organization.id.clone()),
        category,
        retention_days: body.retention_days,
        dry_run_scheduling_enabled: keep(
            body.dry_run_scheduling_enabled,
            current.as_ref().map(|c| c.dry_run_scheduling_enabled),
            false,
        ),
        destructive_scheduling_enabled: keep(
            body.destructive_scheduling_enabled,
            current.as_ref().map(|c| c.destructive_scheduling_enabled),
            false,
        ),
        enabled: keep(body.enabled, current.as_ref().map(|c| c.enabled), true),
    };
    let mut policy = RetentionPolicy::new(category.as_str(), spec);
    policy.metadata.namespace = Some(namespace.clone());
    let api = Api::<RetentionPolicy>::namespaced(state.client.clone(), &namespace);
    let written = write::apply(
        &api,
        &state.caches.retention_policies,
        Some(&caller),
        policy,
    )
    .await?;
    let policy = record(&written, &organization);
    Ok(Json(RetentionAnswer {
        id: policy.id.clone(),
        policy,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(value: serde_json::Value) -> ApiResult<(RetentionCategory, RetentionScope)> {
        let body: SetRetention = crate::extract::parse_json(value.to_string().as_bytes())?;
        checked(&body)
    }

    #[test]
    fn a_valid_body_names_its_category_and_defaults_to_the_organization() {
        let (category, scope) =
            body(json!({"category": "process-attempts", "retentionDays": 7})).unwrap();
        assert_eq!(category, RetentionCategory::ProcessAttempts);
        assert_eq!(scope, RetentionScope::Organization);
    }

    #[test]
    fn every_bad_body_is_a_422_naming_its_field() {
        for (value, field) in [
            (json!({"category": "logs", "retentionDays": 7}), "category"),
            (
                json!({"category": "audit-rows", "retentionDays": 0}),
                "retentionDays",
            ),
            (
                json!({"category": "audit-rows", "retentionDays": 36501}),
                "retentionDays",
            ),
            (
                json!({"category": "audit-rows", "retentionDays": 1.5}),
                "retentionDays",
            ),
            (json!({"category": "audit-rows"}), "retentionDays"),
            (
                json!({"category": "audit-rows", "retentionDays": 7, "scope": "global"}),
                "scope",
            ),
            (
                json!({"category": "audit-rows", "retentionDays": 7, "keepForever": true}),
                "keepForever",
            ),
        ] {
            let error = body(value.clone()).unwrap_err();
            assert_eq!(error.status, 422, "{value}");
            assert_eq!(error.body.details["field"], field, "{value}");
        }
    }
}
