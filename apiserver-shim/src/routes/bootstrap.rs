//! Spec §4.1 bootstrap (auth status, first administrator) and local-password login/logout.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::HeaderMap;
use berth_crds::member::{Member, MemberSpec, OrganizationRole};
use berth_crds::organization::{Organization, OrganizationSpec};
use berth_crds::session::{Session, SessionSpec};
use berth_crds::user::{User, UserSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, password};
use crate::domain::accounts::{
    FIRST_ADMIN_LABEL, MIN_PASSWORD_LENGTH, login_methods, password_secret_name, revoke_session,
    store_password, validate_email,
};
use crate::domain::fields::{non_empty, slugify};
use crate::domain::identity::wait_for_namespace;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;
use crate::token::{self, new_id};
use crate::write::apply;

pub use berth_api::bootstrap::{
    BootstrapStatus, FirstAdminRequest, FirstAdminResult, LoginMethod, LoginRequest, LoginResult,
    LogoutRequest, LogoutResult,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<BootstrapStatus, _, _>(
            "/bootstrap/auth/status",
            "Whether a first administrator and organization exist",
            status,
        )
        .public(),
        Endpoint::post::<FirstAdminRequest, FirstAdminResult, _, _>(
            "/bootstrap/auth/first-admin",
            "Create the first administrator and organization (once)",
            first_admin,
        )
        .public(),
        Endpoint::post::<LoginRequest, LoginResult, _, _>(
            "/auth/login",
            "Sign in with email and password",
            login,
        )
        .public(),
        Endpoint::post::<LogoutRequest, LogoutResult, _, _>(
            "/auth/logout",
            "Revoke the current session",
            logout,
        ),
    ]
}

/// ConfigMap whose creation makes the first-admin call happen at most once, even under races.
const BOOTSTRAP_LOCK: &str = "berth-bootstrap";

fn login_url(state: &AppState) -> String {
    format!(
        "{}/auth/login",
        state.config.public_url.trim_end_matches('/')
    )
}

async fn status(State(state): State<AppState>) -> Json<BootstrapStatus> {
    let first_admin = state
        .caches
        .users
        .find(|u| u.labels().contains_key(FIRST_ADMIN_LABEL));
    let mut organizations = state.caches.organizations.state();
    organizations.sort_by_key(|o| o.metadata.creation_timestamp.clone().map(|t| t.0));
    let organization = organizations.first();
    let configured = first_admin.is_some();
    let next_steps = if configured {
        vec!["POST /api/auth/login with the administrator's email and password".to_string()]
    } else {
        vec![
            "POST /api/bootstrap/auth/first-admin with an email to create the first administrator"
                .to_string(),
        ]
    };
    Json(BootstrapStatus {
        bootstrap_required: !configured,
        first_admin_configured: configured,
        organization_configured: organization.is_some(),
        login_methods: login_methods(configured),
        first_admin_email: first_admin.map(|u| u.spec.email.clone()),
        login_url: Some(login_url(&state)),
        organization_id: organization.map(|o| o.name_any()),
        organization_slug: organization.map(|o| o.spec.slug.clone()),
        next_steps,
    })
}

async fn first_admin(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<FirstAdminRequest>,
) -> ApiResult<Json<FirstAdminResult>> {
    validate_first_admin(&body)?;
    claim_bootstrap(&state).await?;

    let email = body.email.trim().to_lowercase();
    let (password, generated) = chosen_password(body.password);
    let user_id = create_first_admin(&state, &email, body.display_name.clone(), &password).await?;
    let organization_name = body.organization_name.unwrap_or_else(|| "Default".into());
    let (organization_id, slug) = create_first_organization(&state, organization_name).await?;
    add_owner(&state, &organization_id, &user_id, &email).await?;

    tracing::info!(user = %user_id, organization = %slug, "first administrator created");
    Ok(Json(FirstAdminResult {
        bootstrap_required: false,
        created: true,
        email,
        login_methods: login_methods(true),
        organization_id,
        organization_slug: slug,
        user_id,
        generated_password: generated,
        login_url: Some(login_url(&state)),
    }))
}

/// The request's fields, checked before anything is read.
fn validate_first_admin(body: &FirstAdminRequest) -> ApiResult<()> {
    validate_email("email", &body.email)?;
    if let Some(password) = &body.password
        && password.chars().count() < MIN_PASSWORD_LENGTH
    {
        return Err(ApiError::validation(
            "password",
            format!("password must be at least {MIN_PASSWORD_LENGTH} characters"),
        ));
    }
    if let Some(name) = &body.organization_name {
        non_empty("organizationName", name)?;
    }
    Ok(())
}

/// Makes this call the one that creates the first administrator: none exists yet, and the
/// bootstrap lock is taken.
async fn claim_bootstrap(state: &AppState) -> ApiResult<()> {
    if state
        .caches
        .users
        .find(|u| u.labels().contains_key(FIRST_ADMIN_LABEL))
        .is_some()
    {
        return Err(ApiError::conflict(
            "the first administrator already exists; sign in instead",
        ));
    }
    take_bootstrap_lock(state).await
}

/// The password to set, and the same again when it was generated (returned once).
fn chosen_password(requested: Option<String>) -> (String, Option<String>) {
    match requested {
        Some(password) => (password, None),
        None => {
            let password = password::generate();
            (password.clone(), Some(password))
        }
    }
}

/// Stores the password's hash and creates the first administrator's User; returns its id.
async fn create_first_admin(
    state: &AppState,
    email: &str,
    display_name: Option<String>,
    password: &str,
) -> ApiResult<String> {
    let user_id = new_id("usr");
    store_password(state, &user_id, password).await?;
    let mut user = User::new(
        &user_id,
        UserSpec {
            email: email.to_string(),
            display_name,
            avatar_url: None,
            password_secret_ref: Some(password_secret_name(&user_id)),
        },
    );
    user.labels_mut()
        .insert(FIRST_ADMIN_LABEL.into(), "true".into());
    apply(
        &Api::all(state.client.clone()),
        &state.caches.users,
        None,
        user,
    )
    .await?;
    Ok(user_id)
}

/// Creates the first organization; returns its id and slug.
async fn create_first_organization(
    state: &AppState,
    organization_name: String,
) -> ApiResult<(String, String)> {
    let slug = slugify(&organization_name);
    let organization = Organization::new(
        &slug,
        OrganizationSpec {
            name: organization_name,
            slug: slug.clone(),
            logo_url: None,
            variables: Vec::new(),
        },
    );
    let organization = apply(
        &Api::all(state.client.clone()),
        &state.caches.organizations,
        None,
        organization,
    )
    .await?;
    Ok((organization.name_any(), slug))
}

/// Makes the first administrator the organization's owner, once its namespace exists.
async fn add_owner(
    state: &AppState,
    organization_id: &str,
    user_id: &str,
    email: &str,
) -> ApiResult<()> {
    let namespace = wait_for_namespace(state, organization_id).await?;
    let member = Member::new(
        &new_id("mem"),
        MemberSpec {
            user_id: user_id.to_string(),
            email: email.to_string(),
            role: OrganizationRole::Owner,
            active: true,
        },
    );
    apply(
        &Api::namespaced(state.client.clone(), &namespace),
        &state.caches.members,
        None,
        member,
    )
    .await?;
    Ok(())
}

/// Creating (not applying) a fixed ConfigMap succeeds exactly once.
async fn take_bootstrap_lock(state: &AppState) -> ApiResult<()> {
    let lock = ConfigMap {
        metadata: ObjectMeta {
            name: Some(BOOTSTRAP_LOCK.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "createdAt".to_string(),
            Timestamp::now().to_string(),
        )])),
        ..Default::default()
    };
    let api = Api::<ConfigMap>::namespaced(state.client.clone(), &state.config.system_namespace);
    match api.create(&PostParams::default(), &lock).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Err(ApiError::conflict(
            "the first administrator already exists; sign in instead",
        )),
        Err(error) => Err(error.into()),
    }
}

/// The user with `email`: from the cache, or, for a user created a moment ago (by kubectl or
/// `POST /users`) that the cache has not seen yet, from the API server — then the cache is
/// awaited, so the session's next request finds the user too.
async fn find_user_by_email(
    state: &AppState,
    email: &str,
) -> ApiResult<Option<std::sync::Arc<User>>> {
    let matches = |u: &User| u.spec.email.eq_ignore_ascii_case(email);
    if let Some(user) = state.caches.users.find(|u| matches(u)) {
        return Ok(Some(user));
    }
    let listed = Api::<User>::all(state.client.clone())
        .list(&Default::default())
        .await?;
    let Some(user) = listed.items.into_iter().find(|u| matches(u)) else {
        return Ok(None);
    };
    crate::cache::catch_up(&state.caches.users, &user).await?;
    Ok(Some(std::sync::Arc::new(user)))
}

async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<LoginRequest>,
) -> ApiResult<Json<LoginResult>> {
    let email = body.email.trim().to_lowercase();
    // Counted now, forgotten only on success: a failure stays counted whatever its cause.
    state.login_limiter.attempt(&email).await?;
    let refused = || ApiError::unauthenticated("the email or password is wrong");
    let Some(user) = find_user_by_email(&state, &email).await? else {
        return Err(refused());
    };
    let api = Api::<Secret>::namespaced(state.client.clone(), &state.config.system_namespace);
    let hash = api
        .get_opt(&password_secret_name(&user.name_any()))
        .await?
        .and_then(|secret| {
            secret
                .data?
                .get("hash")
                .map(|h| String::from_utf8_lossy(&h.0).into_owned())
        });
    if !hash.is_some_and(|hash| password::verify(&body.password, &hash)) {
        record_failed_sign_in(&state, &user, &email);
        return Err(refused());
    }
    state.login_limiter.succeeded(&email).await;

    let secret = token::generate(token::SESSION_PREFIX);
    let session_id = new_id("sess");
    let ttl = SignedDuration::try_from(state.config.session_ttl).map_err(ApiError::internal)?;
    let expires_at = Timestamp::now()
        .checked_add(ttl)
        .map_err(ApiError::internal)?;
    let user_agent = headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let session = Session::new(
        &session_id,
        SessionSpec {
            user_id: user.name_any(),
            client_kind: body.client_kind.unwrap_or_else(|| "web".into()),
            display_name: body.display_name,
            token_digest: token::digest(&secret),
            expires_at: Time(expires_at),
            revoked: false,
            ip_address: None,
            user_agent,
            organization_id: None,
        },
    );
    let api = Api::namespaced(state.client.clone(), &state.config.system_namespace);
    apply(&api, &state.caches.sessions, None, session).await?;
    Ok(Json(LoginResult {
        token: secret,
        session_id,
        user_id: user.name_any(),
        expires_at: timestamp(&Time(expires_at)),
    }))
}

/// A wrong password for a user is an audit event in each organization the user is an active
/// member of (an email nobody uses belongs to no organization).
fn record_failed_sign_in(state: &AppState, user: &User, email: &str) {
    let user_id = user.name_any();
    let now = Timestamp::now().as_millisecond();
    let namespaces = state
        .caches
        .members
        .state()
        .into_iter()
        .filter(|m| m.spec.user_id == user_id && m.spec.active)
        .filter_map(|m| m.namespace());
    for namespace in namespaces {
        crate::audit::record_refusal(
            &state.observations,
            crate::audit::Refusal {
                id: format!("sif-{user_id}-{now}-{}", new_id("a")),
                verb: crate::audit::Verb::SignInFailed,
                namespace: &namespace,
                kind: "User",
                name: &user_id,
                actor: ("anonymous", email),
                action: "POST /auth/login",
                summary: format!("a sign-in as {email} failed: wrong password"),
            },
        );
    }
}

async fn logout(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(_): JsonBody<LogoutRequest>,
) -> ApiResult<Json<LogoutResult>> {
    let (_, _, session_id) = caller.require_user()?;
    let revoked_at = revoke_session(&state, session_id).await?;
    Ok(Json(LogoutResult {
        session_id: session_id.to_string(),
        revoked_at,
    }))
}
