//! Spec §4.3, organizations: the caller's context and switching it, an organization's profile
//! and deletion, and creating further organizations (not in the spec's table; without it a
//! user could never belong to more than the first organization).

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_crds::member::{MemberSpec, OrganizationRole};
use berth_crds::organization::{Organization, OrganizationSpec};
use berth_crds::session::Session;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, CallerOrganization, role_name, user_organization};
use crate::cache::{catch_up, wait_deleted};
use crate::domain::accounts::login_methods;
use crate::domain::fields::{confirm, non_empty, slugify};
use crate::domain::identity::wait_for_namespace;
use crate::domain::identity::{
    display_name, image_url, in_organization, live_organization, memberships, now, permissions,
    updated_at,
};
use crate::domain::members::write_member;
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::organizations::{
    ContextUser, DeletedOrganization, OrganizationContext, OrganizationProfile, OrganizationSummary,
};
pub use berth_api::organizations::{
    CreateOrganization, DeleteOrganization, SwitchOrganization, UpdateOrganization,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateOrganization, IdResponse, _, _>(
            "/organizations",
            "Create an organization you own",
            create,
        ),
        Endpoint::get::<OrganizationContext, _, _>(
            "/organizations/current-context",
            "Your organizations and the one you act in",
            context,
        ),
        Endpoint::post::<SwitchOrganization, OrganizationContext, _, _>(
            "/organizations/current-context/switch",
            "Act in another of your organizations",
            switch,
        ),
        Endpoint::get::<OrganizationProfile, _, _>(
            "/organizations/{organizationId}/profile",
            "Show an organization's profile",
            profile,
        ),
        Endpoint::post::<UpdateOrganization, OrganizationProfile, _, _>(
            "/organizations/{organizationId}/profile",
            "Change an organization's name or logo",
            update_profile,
        ),
        Endpoint::delete::<DeleteOrganization, DeletedOrganization, _, _>(
            "/organizations/{organizationId}",
            "Delete an organization and everything in it",
            delete,
        ),
    ]
}

/// Longest organization slug: its namespace `org-<slug>` must stay a 63-character DNS label.
pub const MAX_SLUG_LENGTH: usize = berth_crds::limits::ORGANIZATION_SLUG_MAX;
/// Path segments under `/organizations/` that are not organization ids.
const RESERVED_SLUGS: &[&str] = &["current-context"];

fn summary(organization: &Organization, role: OrganizationRole) -> OrganizationSummary {
    OrganizationSummary {
        organization_id: organization.name_any(),
        name: organization.spec.name.clone(),
        slug: organization.spec.slug.clone(),
        role: role_name(role).to_string(),
    }
}

/// The context of `user_id` acting in `current`.
fn context_record(
    state: &AppState,
    caller: &Caller,
    current: Option<&CallerOrganization>,
) -> ApiResult<OrganizationContext> {
    let (user_id, email, _) = caller.require_user()?;
    let user = state.caches.users.find(|u| u.name_any() == user_id);
    let organizations: Vec<OrganizationSummary> = memberships(state, user_id)
        .iter()
        .map(|(organization, member)| summary(organization, member.spec.role))
        .collect();
    let current_organization = current.and_then(|current| {
        live_organization(state, &current.id).map(|o| summary(&o, current.role))
    });
    Ok(OrganizationContext {
        user: ContextUser {
            user_id: user_id.to_string(),
            email: email.to_string(),
            display_name: user.as_ref().and_then(|u| u.spec.display_name.clone()),
            avatar_url: user.as_ref().and_then(|u| u.spec.avatar_url.clone()),
        },
        permissions: permissions(current_organization.as_ref().and(current.map(|c| c.role))),
        current_organization,
        organizations,
        login_methods: login_methods(true),
    })
}

async fn context(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<OrganizationContext>> {
    Ok(Json(context_record(
        &state,
        &caller,
        caller.organization.as_ref(),
    )?))
}

async fn switch(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<SwitchOrganization>,
) -> ApiResult<Json<OrganizationContext>> {
    let (user_id, _, session_id) = caller.require_user()?;
    non_empty("organizationId", &body.organization_id)?;
    in_organization(&state, &caller, &body.organization_id)?;
    // A merge patch of this one field: a full apply from the cache could race with a
    // concurrent revoke and write `revoked: false` back.
    let api = Api::<Session>::namespaced(state.client.clone(), &state.config.system_namespace);
    let written = api
        .patch(
            session_id,
            &PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(serde_json::json!({
                "spec": { "organizationId": body.organization_id }
            })),
        )
        .await?;
    catch_up(&state.caches.sessions, &written).await?;
    let current = user_organization(&state, user_id, Some(&body.organization_id));
    Ok(Json(context_record(&state, &caller, current.as_ref())?))
}

/// The organization `id` as the caller sees it (404 unless an active member).
fn scoped_organization(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<(Caller, std::sync::Arc<Organization>)> {
    let scoped = in_organization(state, caller, id)?;
    let organization =
        live_organization(state, id).ok_or_else(|| ApiError::not_found("organization", id))?;
    Ok((scoped, organization))
}

fn profile_record(organization: &Organization, role: OrganizationRole) -> OrganizationProfile {
    OrganizationProfile {
        organization_id: organization.name_any(),
        name: organization.spec.name.clone(),
        slug: organization.spec.slug.clone(),
        role: role_name(role).to_string(),
        permissions: permissions(Some(role)),
        logo_url: organization.spec.logo_url.clone(),
        created_at: created_at(&organization.metadata),
        updated_at: updated_at(&organization.metadata),
    }
}

async fn profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<OrganizationProfile>> {
    let (scoped, organization) = scoped_organization(&state, &caller, &id)?;
    Ok(Json(profile_record(
        &organization,
        scoped.organization()?.role,
    )))
}

async fn update_profile(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<UpdateOrganization>,
) -> ApiResult<Json<OrganizationProfile>> {
    let (scoped, organization) = scoped_organization(&state, &caller, &id)?;
    let role = scoped.require_role(OrganizationRole::Admin)?.role;
    let mut desired = Organization::new(&id, organization.spec.clone());
    if let Some(name) = &body.name {
        desired.spec.name = display_name("name", name)?
            .ok_or_else(|| ApiError::validation("name", "name must be at least 1 character"))?;
    }
    if let Some(url) = &body.logo_url {
        desired.spec.logo_url = image_url("logoUrl", url)?;
    }
    *desired.labels_mut() = organization.labels().clone();
    let written = apply(
        &Api::all(state.client.clone()),
        &state.caches.organizations,
        Some(&scoped),
        desired,
    )
    .await?;
    Ok(Json(profile_record(&written, role)))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteOrganization>,
) -> ApiResult<Json<DeletedOrganization>> {
    let (scoped, organization) = scoped_organization(&state, &caller, &id)?;
    scoped.require_role(OrganizationRole::Owner)?;
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(
        confirmation.organization_id.as_deref(),
        &id,
        "organizationId",
        "organization",
    )?;
    // The controller's finalizer deletes the namespace (and with it every object inside).
    let api = Api::<Organization>::all(state.client.clone());
    // The API server answers with the object while finalizers run, else with a status.
    let marked = api.delete(&id, &DeleteParams::background()).await?.left();
    wait_deleted(&state.caches.organizations, organization.as_ref(), marked).await?;
    tracing::info!(organization = %id, "organization deleted");
    Ok(Json(DeletedOrganization {
        organization_id: id,
        deleted_at: timestamp(&now()),
    }))
}

/// The shared slug rule with the organization limit, and no reserved path segment.
fn validate_slug(slug: &str) -> ApiResult<()> {
    crate::domain::fields::validate_slug(slug, MAX_SLUG_LENGTH)?;
    if RESERVED_SLUGS.contains(&slug) {
        return Err(ApiError::validation(
            "slug",
            format!("the slug {slug} is reserved"),
        ));
    }
    Ok(())
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateOrganization>,
) -> ApiResult<Json<IdResponse>> {
    let (user_id, email, _) = caller.require_user()?;
    let name = display_name("name", &body.name)?
        .ok_or_else(|| ApiError::validation("name", "name must be at least 1 character"))?;
    let slug = match &body.slug {
        Some(slug) => slug.clone(),
        None => derived_slug(&state, &name),
    };
    validate_slug(&slug)?;
    let organization = Organization::new(
        &slug,
        OrganizationSpec {
            name,
            slug: slug.clone(),
            logo_url: None,
            variables: Vec::new(),
        },
    );
    // Create, not apply: an existing organization must never be taken over.
    let api = Api::<Organization>::all(state.client.clone());
    let created = match api.create(&PostParams::default(), &organization).await {
        Ok(created) => created,
        Err(kube::Error::Api(status)) if status.code == 409 => {
            return Err(
                ApiError::conflict(format!("an organization with the slug {slug} exists"))
                    .with_detail("field", "slug"),
            );
        }
        Err(error) => return Err(error.into()),
    };
    catch_up(&state.caches.organizations, &created).await?;
    let namespace = wait_for_namespace(&state, &slug).await?;
    let owner = MemberSpec {
        user_id: user_id.to_string(),
        email: email.to_string(),
        role: OrganizationRole::Owner,
        active: true,
    };
    write_member(&state, &caller, &namespace, &new_id("mem"), owner).await?;
    tracing::info!(organization = %slug, user = %user_id, "organization created");
    Ok(Json(IdResponse { id: slug }))
}

/// A slug from the name, with a random tail when that one is taken.
fn derived_slug(state: &AppState, name: &str) -> String {
    // `new_id` appends a dash and 12 characters.
    let base: String = slugify(name).chars().take(MAX_SLUG_LENGTH - 13).collect();
    let base = base.trim_end_matches('-').to_string();
    let taken = |slug: &str| {
        RESERVED_SLUGS.contains(&slug)
            || state
                .caches
                .organizations
                .find(|o| o.name_any() == slug)
                .is_some()
    };
    if taken(&base) { new_id(&base) } else { base }
}
