//! Spec §4.6, SSH credentials: list, create, show (with usage), delete (refused while any server
//! uses the credential) and rotate in place. The private key lives only in a Secret owned by the
//! SshCredential; no response, log line or error message carries it.

use axum::extract::{Path, State};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use berth_api::common::IdResponse;
use berth_crds::member::OrganizationRole;
use berth_crds::ssh_credential::{
    PrivateKeySecretRef, SshCredential, SshCredentialSpec, SshCredentialUsage,
};
use berth_remote::ClientKey;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::Endpoint;
use crate::auth::{Caller, CallerOrganization, Principal};
use crate::domain::credentials::{lookup, parse_key};
use crate::domain::fields::confirm;
use crate::domain::objects::{all_in, owned_secret};
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::KeyBody;
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::{apply, merge_status};

pub use berth_api::credentials::{
    CreateCredential, CredentialList, CredentialRecord, DeleteCredential, RotateCredential,
    RotatedCredentialRecord,
};

pub use berth_api::credentials::{CredentialShow, RotatedCredential};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<CredentialList, _, _>("/credentials/ssh", "List SSH credentials", list),
        Endpoint::post::<CreateCredential, IdResponse, _, _>(
            "/credentials/ssh",
            "Create an SSH credential (the key is stored only in a Secret)",
            create,
        ),
        Endpoint::get::<CredentialShow, _, _>(
            "/credentials/ssh/{credentialId}",
            "Show an SSH credential, with the servers using it when includeUsage is true",
            show,
        ),
        Endpoint::delete::<DeleteCredential, IdResponse, _, _>(
            "/credentials/ssh/{credentialId}",
            "Delete an SSH credential; refused while any server uses it",
            delete,
        ),
        Endpoint::post::<RotateCredential, RotatedCredential, _, _>(
            "/credentials/ssh/{credentialId}/rotate",
            "Replace the private key in place; the next SSH connection uses the new key",
            rotate,
        ),
    ]
}

/// Largest `limit` of `GET /credentials/ssh` (spec §8).
pub const MAX_LIMIT: u64 = 500;
/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 100;
/// Type and data key of the Secrets the shim writes (the standard SSH auth Secret).
pub const SECRET_TYPE: &str = "kubernetes.io/ssh-auth";
pub const SECRET_KEY: &str = "ssh-privatekey";
/// Label naming the credential a key Secret belongs to.
pub const CREDENTIAL_LABEL: &str = "berth.dev/ssh-credential";
const KIND: &str = "ssh-private-key";

/// Reads need a member; deploy tokens are automation for deployments and see no credentials.
fn reader(caller: &Caller) -> ApiResult<&CallerOrganization> {
    if matches!(caller.principal, Principal::DeployToken { .. }) {
        return Err(ApiError::forbidden(
            "deploy tokens cannot read SSH credentials",
        ));
    }
    caller.require_role(OrganizationRole::Member)
}

/// Writes need a signed-in admin or owner.
fn writer(caller: &Caller) -> ApiResult<&CallerOrganization> {
    caller.require_user()?;
    caller.require_role(OrganizationRole::Admin)
}

/// Which servers use a credential, from the server cache (fresher than the credential's status).
/// Servers being deleted are gone for the API (`DELETE /servers` answered); their cleanup still
/// logs in with the key, which the controller's finalizer on the credential keeps until it is
/// done, so a credential delete right after theirs is accepted and completes after them.
pub fn usage_of(state: &AppState, namespace: &str, id: &str) -> SshCredentialUsage {
    let servers: Vec<_> = all_in(&state.caches.servers, namespace)
        .iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .map(|s| s.as_ref().clone())
        .collect();
    berth_crds::ssh_credential::usage_of(id, &servers)
}

pub fn record(credential: &SshCredential) -> CredentialRecord {
    let status = credential.status.clone().unwrap_or_default();
    CredentialRecord {
        id: credential.name_any(),
        name: credential.spec.name.clone(),
        kind: KIND.into(),
        username: credential.spec.username.clone(),
        public_key_configured: status.public_key_configured,
        private_key_configured: status.private_key_configured,
        created_at: created_at(&credential.metadata),
        rotated_at: status.rotated_at.as_ref().map(timestamp),
        public_key: status.public_key,
        fingerprint: status.fingerprint,
    }
}

/// The Secret data of a key: what the user sent, with exactly one trailing newline (OpenSSH
/// tools reject a key file without it).
fn key_bytes(text: &str) -> String {
    format!("{}\n", text.trim())
}

/// What the shim knows about a key the moment it writes it; the controller confirms it.
fn key_status(key: &ClientKey) -> serde_json::Value {
    json!({
        "publicKeyConfigured": true,
        "privateKeyConfigured": true,
        "publicKey": key.public_key(),
        "fingerprint": key.fingerprint(),
    })
}

fn api(state: &AppState, namespace: &str) -> Api<SshCredential> {
    Api::namespaced(state.client.clone(), namespace)
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<CredentialList>> {
    let organization = reader(&caller)?;
    known_params(&query, &["limit"])?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    let mut credentials: Vec<_> = all_in(&state.caches.ssh_credentials, &organization.namespace)
        .into_iter()
        .filter(|c| c.metadata.deletion_timestamp.is_none())
        .collect();
    credentials.sort_by_key(|c| {
        (
            c.metadata.creation_timestamp.clone().map(|t| t.0),
            c.name_any(),
        )
    });
    let items = credentials
        .iter()
        .take(limit as usize)
        .map(|c| record(c))
        .collect();
    Ok(Json(CredentialList { items }))
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    KeyBody(body): KeyBody<CreateCredential>,
) -> ApiResult<Json<IdResponse>> {
    let organization = writer(&caller)?.clone();
    body.validate()?;
    let key = parse_key("privateKey", &body.private_key)?;
    let id = new_id("ssh");
    let secret_name = format!("{id}-key");
    let desired = SshCredential::new(
        &id,
        SshCredentialSpec {
            name: body.name.trim().to_string(),
            kind: body.kind,
            username: body.username,
            private_key_secret_ref: PrivateKeySecretRef {
                name: secret_name.clone(),
                key: SECRET_KEY.into(),
            },
        },
    );
    let api = api(&state, &organization.namespace);
    let written = apply(&api, &state.caches.ssh_credentials, Some(&caller), desired).await?;
    let secret = key_secret(&written, &secret_name, &body.private_key);
    let secrets = Api::<Secret>::namespaced(state.client.clone(), &organization.namespace);
    if let Err(error) = secrets.create(&PostParams::default(), &secret).await {
        // Without its Secret the credential is useless; take it back.
        let _ = api.delete(&id, &Default::default()).await;
        return Err(error.into());
    }
    // Best effort: the controller fills the same fields from the Secret anyway.
    let recorded = merge_status(&api, &state.caches.ssh_credentials, &id, key_status(&key)).await;
    if let Err(error) = recorded {
        tracing::warn!(credential = %id, message = %error.body.message, "key not recorded in status yet");
    }
    tracing::info!(
        credential = %id,
        organization = %organization.id,
        fingerprint = %key.fingerprint(),
        "SSH credential created"
    );
    Ok(Json(IdResponse { id }))
}

/// The Secret holding a credential's key, owned by the credential so it goes away with it.
fn key_secret(credential: &SshCredential, name: &str, private_key: &str) -> Secret {
    Secret {
        data: Some(
            [(
                SECRET_KEY.to_string(),
                k8s_openapi::ByteString(key_bytes(private_key).into_bytes()),
            )]
            .into(),
        ),
        ..owned_secret(credential, CREDENTIAL_LABEL, name, SECRET_TYPE)
    }
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<CredentialShow>> {
    let organization = reader(&caller)?;
    known_params(&query, &["includeUsage"])?;
    let include_usage = query.boolean("includeUsage")?;
    let credential = lookup(&state, &organization.namespace, &id)?;
    Ok(Json(CredentialShow {
        schema_version: "credentials.show/v1".into(),
        credential: record(&credential),
        usage: include_usage.then(|| usage_of(&state, &organization.namespace, &id)),
        generated_at: Timestamp::now().to_string(),
    }))
}

/// 409 listing the servers that use the credential.
fn in_use(id: &str, usage: SshCredentialUsage) -> ApiError {
    let blockers: Vec<_> = usage
        .servers
        .iter()
        .map(|s| {
            json!({
                "kind": "server",
                "id": s.server_id,
                "name": s.server_name,
                "lifecycleStatus": s.lifecycle_status,
            })
        })
        .collect();
    ApiError::conflict(format!(
        "SSH credential {id} is used by {} server(s) ({} active, {} inactive); delete them or \
         move them to another credential first",
        usage.total_servers, usage.active_servers, usage.inactive_servers
    ))
    .with_detail("blockers", blockers)
    .with_detail("usage", serde_json::to_value(&usage).unwrap_or_default())
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteCredential>,
) -> ApiResult<Json<IdResponse>> {
    let namespace = caller.organization()?.namespace.clone();
    let credential = lookup(&state, &namespace, &id)?;
    let organization = writer(&caller)?;
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(
        confirmation.credential_id.as_deref(),
        &id,
        "credentialId",
        "SSH credential",
    )?;
    let usage = usage_of(&state, &namespace, &id);
    if usage.total_servers > 0 {
        return Err(in_use(&id, usage));
    }
    // A server created meanwhile is refused (its credential is being deleted), and the
    // controller's finalizer keeps the credential while any server still uses it.
    let api = api(&state, &namespace);
    let marked =
        crate::write::delete(&api, credential.as_ref(), &Default::default(), &caller).await?;
    crate::cache::wait_deleted(&state.caches.ssh_credentials, &credential, marked).await?;
    tracing::info!(credential = %id, organization = %organization.id, "SSH credential deleted");
    Ok(Json(IdResponse { id }))
}

async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    KeyBody(body): KeyBody<RotateCredential>,
) -> ApiResult<Json<RotatedCredential>> {
    let namespace = caller.organization()?.namespace.clone();
    let credential = lookup(&state, &namespace, &id)?;
    let organization = writer(&caller)?.clone();
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(
        confirmation.credential_id.as_deref(),
        &id,
        "credentialId",
        "SSH credential",
    )?;
    let key = parse_key("privateKey", &body.private_key)?;
    let affected = usage_of(&state, &namespace, &id);
    write_key(&state, &credential, &body.private_key).await?;
    // Written with the fingerprint, so the controller, seeing its own fingerprint, keeps this
    // time instead of stamping its own.
    let rotated_at = Time(Timestamp::now());
    let mut status = key_status(&key);
    status["rotatedAt"] = json!(rotated_at);
    let api = api(&state, &namespace);
    let written = merge_status(&api, &state.caches.ssh_credentials, &id, status).await?;
    // Kubernetes keeps whole seconds; report the time as stored, as later reads show it.
    let rotated_at = written
        .status
        .and_then(|s| s.rotated_at)
        .unwrap_or(rotated_at);
    tracing::info!(
        credential = %id,
        organization = %organization.id,
        fingerprint = %key.fingerprint(),
        servers = affected.total_servers,
        "SSH credential rotated"
    );
    Ok(Json(RotatedCredential {
        schema_version: "credentials.rotate-ssh/v1".into(),
        credential: RotatedCredentialRecord {
            id,
            kind: KIND.into(),
            username_configured: credential.spec.username.is_some(),
            public_key_configured: true,
            private_key_configured: true,
            rotated_at: timestamp(&rotated_at),
        },
        affected_usage: affected,
    }))
}

/// Replaces the key in the Secret the credential references (only that entry, whoever made
/// the Secret), or recreates a missing Secret.
async fn write_key(
    state: &AppState,
    credential: &SshCredential,
    private_key: &str,
) -> ApiResult<()> {
    let namespace = credential.namespace().unwrap_or_default();
    let reference = &credential.spec.private_key_secret_ref;
    let secrets = Api::<Secret>::namespaced(state.client.clone(), &namespace);
    let patch = json!({
        "data": { (reference.key.as_str()): STANDARD.encode(key_bytes(private_key)) },
    });
    let params = PatchParams {
        field_manager: Some(crate::state::FIELD_MANAGER.into()),
        ..Default::default()
    };
    match secrets
        .patch(&reference.name, &params, &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            let mut secret = key_secret(credential, &reference.name, private_key);
            if reference.key != SECRET_KEY {
                secret.type_ = None;
                secret.data = Some(
                    [(
                        reference.key.clone(),
                        k8s_openapi::ByteString(key_bytes(private_key).into_bytes()),
                    )]
                    .into(),
                );
            }
            secrets.create(&PostParams::default(), &secret).await?;
            Ok(())
        }
        Err(error) => Err(error.into()),
    }
}
