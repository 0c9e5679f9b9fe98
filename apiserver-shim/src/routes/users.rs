//! `POST /users` (not in the spec's table): an administrator creates an account for someone
//! who will then accept an invitation. Membership only ever comes from an invitation.

use axum::extract::State;
use berth_crds::member::OrganizationRole;
use berth_crds::user::{User, UserSpec};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, password};
use crate::domain::accounts::{
    MIN_PASSWORD_LENGTH, password_secret_name, store_password, validate_email,
};
use crate::domain::identity::display_name;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::users::{CreateUser, CreatedUser};

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::post::<CreateUser, CreatedUser, _, _>(
        "/users",
        "Create a user account (administrators)",
        create,
    )]
}

/// Longest password accepted (Argon2 takes any length; this bounds the work per request).
pub const MAX_PASSWORD_LENGTH: usize = 256;

fn check_password(password: &str) -> ApiResult<()> {
    let length = password.chars().count();
    if !(MIN_PASSWORD_LENGTH..=MAX_PASSWORD_LENGTH).contains(&length) {
        return Err(ApiError::validation(
            "password",
            format!("password must be {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters"),
        ));
    }
    Ok(())
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateUser>,
) -> ApiResult<Json<CreatedUser>> {
    caller.require_user()?;
    caller.require_role(OrganizationRole::Admin)?;
    validate_email("email", body.email.trim())?;
    let email = body.email.trim().to_lowercase();
    let name = match &body.display_name {
        Some(name) => display_name("displayName", name)?,
        None => None,
    };
    if let Some(password) = &body.password {
        check_password(password)?;
    }
    if state
        .caches
        .users
        .find(|u| u.spec.email.eq_ignore_ascii_case(&email))
        .is_some()
    {
        return Err(
            ApiError::conflict(format!("an account for {email} already exists"))
                .with_detail("field", "email"),
        );
    }
    let (password, generated) = match body.password {
        Some(password) => (password, None),
        None => {
            let password = password::generate();
            (password.clone(), Some(password))
        }
    };
    let user_id = new_id("usr");
    store_password(&state, &user_id, &password).await?;
    let user = User::new(
        &user_id,
        UserSpec {
            email: email.clone(),
            display_name: name,
            avatar_url: None,
            password_secret_ref: Some(password_secret_name(&user_id)),
        },
    );
    let written = apply(
        &Api::all(state.client.clone()),
        &state.caches.users,
        Some(&caller),
        user,
    )
    .await?;
    tracing::info!(user = %written.name_any(), "user created");
    Ok(Json(CreatedUser {
        user_id,
        email,
        generated_password: generated,
    }))
}
