//! Users' accounts: how they sign in, their e-mail rule, password hashes and sessions.

use std::collections::BTreeMap;

use berth_api::bootstrap::LoginMethod;
use berth_crds::session::Session;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use kube::{Api, ResourceExt};

use crate::auth::password;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::write::apply;

/// The one login method Berth offers.
pub const LOCAL_PASSWORD: &str = "local-password";

/// Label on the User created by the first-admin call.
pub const FIRST_ADMIN_LABEL: &str = "berth.dev/first-admin";

/// Passwords people choose must be at least this long.
pub const MIN_PASSWORD_LENGTH: usize = 12;

/// The ways to sign in that bootstrap and organization answers list; `configured` once the
/// first administrator exists.
pub fn login_methods(configured: bool) -> Vec<LoginMethod> {
    vec![LoginMethod {
        key: LOCAL_PASSWORD.into(),
        configured,
        enabled: true,
        reason: if configured {
            "sign in with email and password".into()
        } else {
            "create the first administrator to enable it".into()
        },
    }]
}

/// A plausible email: something@something.tld, no spaces.
pub fn validate_email(field: &str, email: &str) -> ApiResult<()> {
    let valid = email.len() <= 254
        && !email.contains(char::is_whitespace)
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        });
    if valid {
        Ok(())
    } else {
        Err(ApiError::validation(
            field,
            format!("{field} must be an email address like name@example.com"),
        ))
    }
}

/// Name of the Secret holding a user's password hash.
pub fn password_secret_name(user_id: &str) -> String {
    format!("berth-password-{user_id}")
}

/// Stores the Argon2 hash of `password` in the user's Secret (never the password itself).
pub async fn store_password(state: &AppState, user_id: &str, password: &str) -> ApiResult<()> {
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(password_secret_name(user_id)),
            labels: Some(BTreeMap::from([(
                "berth.dev/user".to_string(),
                user_id.to_string(),
            )])),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(BTreeMap::from([(
            "hash".to_string(),
            ByteString(password::hash(password).into_bytes()),
        )])),
        ..Default::default()
    };
    let api = Api::<Secret>::namespaced(state.client.clone(), &state.config.system_namespace);
    api.patch(
        &password_secret_name(user_id),
        &kube::api::PatchParams::apply(crate::state::FIELD_MANAGER).force(),
        &kube::api::Patch::Apply(&secret),
    )
    .await?;
    Ok(())
}

/// Marks a session revoked (`spec.revoked`, `status.revokedAt`); it is refused from the next
/// request on. Revoking again keeps the first `revokedAt`.
pub async fn revoke_session(state: &AppState, session_id: &str) -> ApiResult<String> {
    let session = state
        .caches
        .sessions
        .find(|s| s.name_any() == session_id)
        .ok_or_else(|| ApiError::not_found("session", session_id))?;
    let recorded = session.status.as_ref().and_then(|s| s.revoked_at.clone());
    if let (true, Some(revoked_at)) = (session.spec.revoked, &recorded) {
        return Ok(timestamp(revoked_at));
    }
    let api = Api::namespaced(state.client.clone(), &state.config.system_namespace);
    // The time goes in before the spec changes: berth-controller stamps `revokedAt` only when
    // it is missing, so it keeps this one and a repeated revoke reports the same time.
    let revoked_at = recorded.unwrap_or_else(crate::domain::identity::now);
    crate::domain::identity::apply_status(
        &api,
        &state.caches.sessions,
        session_id,
        serde_json::json!({ "revokedAt": revoked_at }),
    )
    .await?;
    if !session.spec.revoked {
        let mut desired = Session::new(session_id, session.spec.clone());
        desired.spec.revoked = true;
        apply(&api, &state.caches.sessions, None, desired).await?;
    }
    Ok(timestamp(&revoked_at))
}
