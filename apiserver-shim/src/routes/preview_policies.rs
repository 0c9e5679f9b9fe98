//! Preview policies over REST: Appaloft's `POST /preview-policies` (configure) and
//! `POST /preview-policies/show`. A project, or one resource of it, has one PreviewPolicy in
//! its organization's namespace, named after the scope; configuring replaces it. Showing a
//! resource without a policy of its own shows its project's, else the defaults. The
//! controller and the pull-request webhook read the same objects.

use axum::extract::State;
use axum::http::StatusCode;
use berth_api::common::IdResponse;
use berth_api::previews::{
    ConfigurePreviewPolicy, POLICY_SHOW_SCHEMA, PreviewPolicyScope, PreviewPolicyShow,
    PreviewPolicySummary, ShowPreviewPolicy,
};
use berth_crds::member::OrganizationRole;
use berth_crds::preview::PreviewPolicy;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::domain::backup_policies::created_and_updated;
use crate::domain::objects::all_in;
use crate::domain::previews::policies::{self, Effective};
use crate::domain::{environments, projects, resource_access};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;
use crate::write::apply;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<ConfigurePreviewPolicy, IdResponse, _, _>(
            "/preview-policies",
            "Create (201) or replace (200) the preview policy of a project or of one resource \
             of it: whether pull requests of the repository and of forks get previews (forks \
             with or without secret variables), how many previews run at once (1-100) and how \
             many hours one lives after its last push (1-8760); settings left out take their \
             defaults",
            configure,
        )
        .success(&[StatusCode::OK, StatusCode::CREATED]),
        Endpoint::post::<ShowPreviewPolicy, PreviewPolicyShow, _, _>(
            "/preview-policies/show",
            "The preview policy in force for a project or resource: its own, else (for a \
             resource) its project's, else the defaults (source `default`)",
            show,
        ),
    ]
}

async fn configure(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ConfigurePreviewPolicy>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    check_scope(&state, &caller, &body.scope)?;
    if let Some(base) = &body.policy.environment_profile_base_environment_id {
        check_base_environment(&state, &caller, &body.scope.project_id, base)?;
    }
    let namespace = organization.namespace.clone();
    let spec = policies::spec_of(&body.scope, &body.policy);
    let existing = all_in(&state.caches.preview_policies, &namespace);
    let own = policies::own(&existing, &spec.project_id, spec.resource_id.as_deref());
    let id = match &own {
        Some(policy) => policy.name_any(),
        None => policies::object_name(&body.scope, |name| {
            existing.iter().any(|p| p.name_any() == name)
        }),
    };
    let api = Api::<PreviewPolicy>::namespaced(state.client.clone(), &namespace);
    let policy = PreviewPolicy::new(&id, spec);
    apply(&api, &state.caches.preview_policies, Some(&caller), policy).await?;
    tracing::info!(policy = %id, %namespace, "preview policy configured");
    let code = match own {
        Some(_) => StatusCode::OK,
        None => StatusCode::CREATED,
    };
    Ok((code, Json(IdResponse { id })))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ShowPreviewPolicy>,
) -> ApiResult<Json<PreviewPolicyShow>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.scope.validate()?;
    check_scope(&state, &caller, &body.scope)?;
    let policies = all_in(&state.caches.preview_policies, &organization.namespace);
    let effective = policies::effective(
        &policies,
        &body.scope.project_id,
        body.scope.resource_id.as_deref(),
    );
    Ok(Json(PreviewPolicyShow {
        schema_version: POLICY_SHOW_SCHEMA.into(),
        policy: summary(body.scope, effective),
        generated_at: Timestamp::now().to_string(),
    }))
}

/// The scope's project and resource exist, the caller may see them, and the resource is of
/// the project; each error names its field.
fn check_scope(state: &AppState, caller: &Caller, scope: &PreviewPolicyScope) -> ApiResult<()> {
    let project = &scope.project_id;
    caller
        .require_in_scope(ScopeDimension::Project, project)
        .map_err(|e| e.with_detail("field", "scope.projectId"))?;
    projects::lookup(state, caller, project)
        .map_err(|e| e.with_detail("field", "scope.projectId"))?;
    let Some(resource_id) = &scope.resource_id else {
        return Ok(());
    };
    let resource = resource_access::lookup(state, caller, resource_id)
        .map_err(|e| e.with_detail("field", "scope.resourceId"))?;
    if &resource.spec.project_id != project {
        return Err(ApiError::validation(
            "scope.resourceId",
            format!(
                "scope.resourceId: resource {resource_id} is in project {}, not {project}",
                resource.spec.project_id
            ),
        ));
    }
    Ok(())
}

/// `environmentProfileBaseEnvironmentId` names an environment of the project.
fn check_base_environment(
    state: &AppState,
    caller: &Caller,
    project: &str,
    id: &str,
) -> ApiResult<()> {
    const FIELD: &str = "policy.environmentProfileBaseEnvironmentId";
    let environment =
        environments::lookup(state, caller, id).map_err(|e| e.with_detail("field", FIELD))?;
    if environment.spec.project_id != project {
        return Err(ApiError::validation(
            FIELD,
            format!("{FIELD}: environment {id} is not of project {project}"),
        ));
    }
    Ok(())
}

/// Appaloft's policy summary of the scope asked about.
fn summary(scope: PreviewPolicyScope, effective: Effective) -> PreviewPolicySummary {
    let settings = policies::settings(&effective.spec);
    match effective.policy {
        Some(policy) => PreviewPolicySummary {
            id: Some(policy.name_any()),
            scope,
            settings,
            source: "configured".into(),
            updated_at: Some(created_and_updated(&policy.metadata).1),
        },
        None => PreviewPolicySummary {
            id: None,
            scope,
            settings,
            source: "default".into(),
            updated_at: None,
        },
    }
}
