//! Servers (spec §3 "Server", §4.8 `DELETE /servers/{serverId}`; the other calls follow the rest
//! of the API): list, create, show (with Appaloft's [`rollups`]), activate, deactivate, delete.
//! Deleting needs an inactive server without delete-safety blockers; the controller's finalizer
//! then removes the edge proxy and closes the SSH connection.

mod rollups;

use axum::extract::{Path, State};
use berth_api::common::IdResponse;
use berth_api::servers::USERNAME_MAX;
use berth_crds::condition::{self, ConditionStatus};
use berth_crds::limits::{LIST_LIMIT_MAX, PROJECTS_OFFSET_MAX};
use berth_crds::member::OrganizationRole;
use berth_crds::server::{ProxyKind, Server, ServerLifecycle, ServerProxy, ServerSpec};
use berth_crds::ssh_credential::{SshCredential, SshCredentialKind};
use k8s_openapi::jiff::Timestamp;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::cache::wait_deleted;
use crate::domain::credentials;
use crate::domain::fields::{bounded, confirm};
use crate::domain::objects::{all_in, find_in};
use crate::domain::servers::{blockers_of, current_blockers, lookup, merge_spec, writer};
use crate::domain::time::{created_at, timestamp};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::servers::{
    Blocker, CreateServer, DeleteServer, NoBody, ProxyInput, ProxyRecord, ServerCredential,
    ServerDetail, ServerList, ServerRecord, ServerRollups, ServerSummary,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<ServerList, _, _>("/servers", "List servers", list),
        Endpoint::post::<CreateServer, IdResponse, _, _>(
            "/servers",
            "Register a server reached over SSH with an SSH credential",
            create,
        ),
        Endpoint::get::<ServerDetail, _, _>(
            "/servers/{serverId}",
            "Show a server: reachability, host key, Docker, facts, edge proxy, blockers, and the \
             resources, deployments and domain bindings on it (rollups; includeRollups=false \
             leaves them out)",
            show,
        ),
        Endpoint::post::<NoBody, ServerRecord, _, _>(
            "/servers/{serverId}/deactivate",
            "Stop taking deployments (an inactive server may be deleted)",
            deactivate,
        ),
        Endpoint::post::<NoBody, ServerRecord, _, _>(
            "/servers/{serverId}/activate",
            "Take deployments again",
            activate,
        ),
        Endpoint::delete::<DeleteServer, IdResponse, _, _>(
            "/servers/{serverId}",
            "Delete an inactive server without delete-safety blockers",
            delete,
        ),
    ]
}

/// Largest `limit` of `GET /servers` (as the other lists of spec §8).
pub const MAX_LIMIT: u64 = LIST_LIMIT_MAX;
/// `limit` when the caller gives none.
pub const DEFAULT_LIMIT: u64 = 100;
/// Largest `offset` of `GET /servers`.
pub const MAX_OFFSET: u64 = PROJECTS_OFFSET_MAX;
/// Appaloft's kind of every Berth server: one host reached over SSH.
const TARGET_KIND: &str = "single-server";
/// What Berth runs on every server: the deployments, and the builds of their images.
const WORKLOAD_ROLES: [&str; 2] = ["deployment-runtime", "artifact-builder"];

fn proxy_status(server: &Server) -> &'static str {
    if server.spec.proxy.kind == ProxyKind::None {
        return "disabled";
    }
    let conditions = server
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    match condition::find(conditions, "ProxyReady") {
        Some(c) if c.status == ConditionStatus::True => "ready",
        Some(c) if c.reason == "ProxyKindUnsupported" => "unsupported",
        Some(c) if c.status == ConditionStatus::False => "not-ready",
        _ => "unknown",
    }
}

/// The credential `server` logs in with as Appaloft summarizes it, from the SshCredential it
/// names (`credential`, when the shim's cache holds it): its name and whether its keys are
/// configured, never a key.
fn credential_summary(server: &Server, credential: Option<&SshCredential>) -> ServerCredential {
    let status = credential.and_then(|c| c.status.as_ref());
    ServerCredential {
        kind: credential.map_or(SshCredentialKind::SshPrivateKey, |c| c.spec.kind),
        credential_id: Some(server.spec.credential_id.clone()),
        credential_name: credential.map(|c| c.spec.name.clone()),
        username: Some(server.spec.username.clone()),
        public_key_configured: status.is_some_and(|s| s.public_key_configured),
        private_key_configured: status.is_some_and(|s| s.private_key_configured),
    }
}

/// When `server` became inactive, while it is: the controller's stamp is not shown once the
/// spec says active again, before the controller clears it.
fn deactivated_at(server: &Server) -> Option<String> {
    if server.spec.lifecycle_status != ServerLifecycle::Inactive {
        return None;
    }
    let status = server.status.as_ref()?;
    status.deactivated_at.as_ref().map(timestamp)
}

/// `server`'s record, its credential read from the shim's cache.
pub fn record_of(state: &AppState, server: &Server) -> ServerRecord {
    let namespace = server.namespace().unwrap_or_default();
    let credential = find_in(
        &state.caches.ssh_credentials,
        &namespace,
        &server.spec.credential_id,
        "SSH credential",
    )
    .ok();
    record(server, credential.as_deref())
}

/// `server`'s record, with `credential` the SshCredential it names.
pub fn record(server: &Server, credential: Option<&SshCredential>) -> ServerRecord {
    let spec = &server.spec;
    let status = server.status.clone().unwrap_or_default();
    ServerRecord {
        id: server.name_any(),
        name: spec.name.clone().unwrap_or_else(|| server.name_any()),
        host: spec.host.clone(),
        port: spec.port,
        username: spec.username.clone(),
        credential_id: spec.credential_id.clone(),
        provider_key: spec.provider_key.clone(),
        target_kind: TARGET_KIND.into(),
        workload_roles: WORKLOAD_ROLES.map(String::from).to_vec(),
        base_domain: spec.base_domain.clone(),
        // The spec is the truth the moment it is written, as for projects.
        lifecycle_status: spec.lifecycle_status,
        deactivated_at: deactivated_at(server),
        credential: Some(credential_summary(server, credential)),
        reachable: status.reachable,
        host_key_fingerprint: status
            .host_key_fingerprint
            .clone()
            .or_else(|| spec.expected_host_key_fingerprint.clone()),
        docker_version: status.docker_version.clone(),
        facts: status.facts.clone(),
        proxy: ProxyRecord {
            kind: spec.proxy.kind,
            status: proxy_status(server).into(),
            image: spec.proxy.image.clone(),
            http_port: spec.proxy.http_port,
            https_port: spec.proxy.https_port,
        },
        conditions: status.conditions.iter().map(Into::into).collect(),
        delete_blockers: blockers_of(&status.delete_blockers),
        last_contact_at: status.last_contact_at.as_ref().map(timestamp),
        created_at: created_at(&server.metadata),
    }
}

/// Appaloft's summary of `record`.
pub fn summary(record: &ServerRecord) -> ServerSummary {
    ServerSummary {
        id: record.id.clone(),
        name: record.name.clone(),
        host: record.host.clone(),
        port: record.port,
        provider_key: record.provider_key.clone(),
        target_kind: record.target_kind.clone(),
        workload_roles: record.workload_roles.clone(),
        lifecycle_status: record.lifecycle_status,
        deactivated_at: record.deactivated_at.clone(),
        credential: record.credential.clone(),
        created_at: record.created_at.clone(),
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<ServerList>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    known_params(&query, &["limit", "offset", "lifecycleStatus"])?;
    let limit = query.integer("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)?;
    let offset = query.integer("offset", 0, MAX_OFFSET, 0)?;
    let wanted = match query.one_of("lifecycleStatus", &["active", "inactive", "all"], None)? {
        Some("active") => Some(ServerLifecycle::Active),
        Some("inactive") => Some(ServerLifecycle::Inactive),
        _ => None,
    };
    let mut servers: Vec<_> = all_in(&state.caches.servers, &organization.namespace)
        .into_iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .filter(|s| caller.sees(ScopeDimension::Target, &s.name_any()))
        .filter(|s| wanted.is_none_or(|w| s.spec.lifecycle_status == w))
        .collect();
    servers.sort_by_key(|s| {
        (
            s.metadata.creation_timestamp.clone().map(|t| t.0),
            s.name_any(),
        )
    });
    let total = servers.len();
    let items = servers
        .iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(limit as usize)
        .map(|s| record_of(&state, s))
        .collect();
    Ok(Json(ServerList {
        items,
        total,
        limit,
        offset,
    }))
}

/// The proxy asked for, the defaults filled in (`ProxyInput::validate` checked it).
fn proxy_of(input: Option<ProxyInput>) -> ServerProxy {
    let defaults = ServerProxy::default();
    let Some(input) = input else {
        return defaults;
    };
    ServerProxy {
        kind: input.kind.unwrap_or(defaults.kind),
        image: input.image.unwrap_or(defaults.image),
        http_port: input.http_port.map_or(defaults.http_port, i32::from),
        https_port: input.https_port.map_or(defaults.https_port, i32::from),
    }
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateServer>,
) -> ApiResult<Json<IdResponse>> {
    let organization = writer(&caller)?.clone();
    body.validate_target()?;
    let credential = credentials::lookup(&state, &organization.namespace, &body.credential_id)
        .map_err(|_| {
            ApiError::validation(
                "credentialId",
                format!(
                    "no SSH credential {} in this organization",
                    body.credential_id
                ),
            )
        })?;
    // The credential's own username may have been applied with kubectl: it is held to the
    // same rule as one given here.
    if body.username.is_none()
        && let Some(username) = &credential.spec.username
    {
        bounded("username", username, USERNAME_MAX)?;
    }
    body.validate_settings()?;
    let username = body
        .username
        .or_else(|| credential.spec.username.clone())
        .unwrap_or_else(|| "root".to_string());
    let spec = ServerSpec {
        name: Some(body.name.trim().to_string()),
        host: body.host,
        port: body.port.map_or(22, i32::from),
        username,
        credential_id: body.credential_id,
        provider_key: body.provider_key.unwrap_or_else(|| "generic-ssh".into()),
        lifecycle_status: ServerLifecycle::Active,
        base_domain: body.base_domain,
        expected_host_key_fingerprint: body.expected_host_key_fingerprint,
        docker_socket_path: "/var/run/docker.sock".into(),
        proxy: proxy_of(body.proxy),
    };
    let id = new_id("srv");
    let api = Api::<Server>::namespaced(state.client.clone(), &organization.namespace);
    apply(
        &api,
        &state.caches.servers,
        Some(&caller),
        Server::new(&id, spec),
    )
    .await?;
    tracing::info!(server = %id, organization = %organization.id, "server registered");
    Ok(Json(IdResponse { id }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: QueryParams,
) -> ApiResult<Json<ServerDetail>> {
    caller.require_role(OrganizationRole::Member)?;
    known_params(&query, &["includeRollups"])?;
    let include_rollups = query.boolean_or("includeRollups", true)?;
    let server = lookup(&state, &caller, &id)?;
    let rollups = if include_rollups {
        Some(rollups::of(&state, &caller, &server).await?)
    } else {
        None
    };
    Ok(Json(detail(
        record_of(&state, &server),
        rollups,
        Timestamp::now(),
    )))
}

/// `record` with Appaloft's `servers.show/v1` beside it, made at `now`.
fn detail(record: ServerRecord, rollups: Option<ServerRollups>, now: Timestamp) -> ServerDetail {
    ServerDetail {
        schema_version: "servers.show/v1".into(),
        server: summary(&record),
        rollups,
        generated_at: now.to_string(),
        record,
    }
}

/// Sets `spec.lifecycleStatus` alone, leaving every other field to whoever manages it (a
/// GitOps tool, say).
async fn set_lifecycle(
    state: &AppState,
    caller: &Caller,
    id: &str,
    lifecycle: ServerLifecycle,
) -> ApiResult<Json<ServerRecord>> {
    let server = lookup(state, caller, id)?;
    writer(caller)?;
    if server.spec.lifecycle_status == lifecycle {
        return Ok(Json(record_of(state, &server)));
    }
    let written = merge_spec(state, caller, id, json!({ "lifecycleStatus": lifecycle })).await?;
    tracing::info!(server = %id, ?lifecycle, "server lifecycle changed");
    Ok(Json(record_of(state, &written)))
}

async fn deactivate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<NoBody>,
) -> ApiResult<Json<ServerRecord>> {
    set_lifecycle(&state, &caller, &id, ServerLifecycle::Inactive).await
}

async fn activate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<NoBody>,
) -> ApiResult<Json<ServerRecord>> {
    set_lifecycle(&state, &caller, &id, ServerLifecycle::Active).await
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteServer>,
) -> ApiResult<Json<IdResponse>> {
    let namespace = caller.organization()?.namespace.clone();
    body.validate()?;
    if let Some(key) = &body.idempotency_key {
        match state.server_deletions.get(&namespace, key) {
            Some(done) if done == id => return Ok(Json(IdResponse { id })),
            Some(other) => {
                return Err(ApiError::conflict(format!(
                    "idempotencyKey was already used to delete server {other}"
                ))
                .with_detail("field", "idempotencyKey"));
            }
            None => {}
        }
    }
    let server = find_in(&state.caches.servers, &namespace, &id, "server")?;
    if !caller.sees(ScopeDimension::Target, &id) {
        return Err(ApiError::not_found("server", &id));
    }
    let organization = writer(&caller)?.clone();
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(confirmation.server_id.as_deref(), &id, "serverId", "server")?;
    let remember = |state: &AppState| {
        if let Some(key) = &body.idempotency_key {
            state.server_deletions.record(&namespace, key, &id);
        }
    };
    if server.metadata.deletion_timestamp.is_some() {
        // Already being deleted: the same outcome as the first request.
        remember(&state);
        return Ok(Json(IdResponse { id }));
    }
    let blockers = current_blockers(&state, &server).await?;
    if server.spec.lifecycle_status == ServerLifecycle::Active {
        return Err(ApiError::conflict(format!(
            "server {id} is active; deactivate it (POST /servers/{id}/deactivate) before deleting it"
        ))
        .with_detail("lifecycleStatus", "active")
        .with_detail("blockers", serde_json::to_value(&blockers).unwrap_or_default()));
    }
    if !blockers.is_empty() {
        let names: Vec<String> = blockers
            .iter()
            .map(|b| format!("{}/{}", b.kind, b.id))
            .collect();
        return Err(ApiError::conflict(format!(
            "server {id} still has delete-safety blockers: {}",
            names.join(", ")
        ))
        .with_detail("lifecycleStatus", "inactive")
        .with_detail(
            "blockers",
            serde_json::to_value(&blockers).unwrap_or_default(),
        ));
    }
    let api = Api::<Server>::namespaced(state.client.clone(), &namespace);
    let marked = crate::write::delete(&api, server.as_ref(), &Default::default(), &caller).await?;
    wait_deleted(&state.caches.servers, server.as_ref(), marked).await?;
    remember(&state);
    tracing::info!(server = %id, organization = %organization.id, "server deleted");
    Ok(Json(IdResponse { id }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_keeps_the_defaults_it_does_not_set() {
        assert_eq!(proxy_of(None), ServerProxy::default());
        let proxy = proxy_of(Some(ProxyInput {
            kind: None,
            image: None,
            http_port: Some(8080),
            https_port: None,
        }));
        assert_eq!((proxy.http_port, proxy.https_port), (8080, 443));
    }

    fn server(lifecycle: ServerLifecycle) -> Server {
        let spec = ServerSpec {
            name: Some("web 1".into()),
            host: "203.0.113.7".into(),
            port: 22,
            username: "deploy".into(),
            credential_id: "ssh-1".into(),
            provider_key: "generic-ssh".into(),
            lifecycle_status: lifecycle,
            base_domain: None,
            expected_host_key_fingerprint: None,
            docker_socket_path: "/var/run/docker.sock".into(),
            proxy: ServerProxy::default(),
        };
        Server::new("srv-1", spec)
    }

    fn credential() -> SshCredential {
        let spec = serde_json::from_value(json!({
            "name": "deploy key", "privateKeySecretRef": {"name": "ssh-1-key"},
        }))
        .unwrap();
        let mut credential = SshCredential::new("ssh-1", spec);
        credential.status = Some(berth_crds::ssh_credential::SshCredentialStatus {
            public_key_configured: true,
            private_key_configured: true,
            public_key: Some("ssh-ed25519 AAAA deploy".into()),
            fingerprint: Some("SHA256:abc".into()),
            ..Default::default()
        });
        credential
    }

    #[test]
    fn show_carries_appaloft_summary_beside_the_record() {
        let now = Timestamp::from_second(1_900_000_000).unwrap();
        let record = record(&server(ServerLifecycle::Active), Some(&credential()));
        let shown = serde_json::to_value(detail(record, None, now)).unwrap();
        assert_eq!(shown["schemaVersion"], "servers.show/v1");
        assert_eq!(shown["generatedAt"], "2030-03-17T17:46:40Z");
        let roles = json!(["deployment-runtime", "artifact-builder"]);
        let credential = json!({"kind": "ssh-private-key", "credentialId": "ssh-1",
            "credentialName": "deploy key", "username": "deploy",
            "publicKeyConfigured": true, "privateKeyConfigured": true});
        assert_eq!(
            shown["server"],
            json!({"id": "srv-1", "name": "web 1", "host": "203.0.113.7", "port": 22,
                "providerKey": "generic-ssh", "targetKind": "single-server",
                "workloadRoles": roles, "lifecycleStatus": "active",
                "credential": credential, "createdAt": shown["createdAt"]})
        );
        assert_eq!(
            (&shown["id"], &shown["workloadRoles"], &shown["credential"]),
            (&json!("srv-1"), &roles, &credential)
        );
        assert!(shown.get("rollups").is_none(), "not asked for");
        assert!(shown.get("deactivatedAt").is_none(), "active");
    }

    #[test]
    fn an_unknown_credential_is_named_but_not_configured() {
        let record = record(&server(ServerLifecycle::Active), None);
        assert_eq!(
            serde_json::to_value(record.credential).unwrap(),
            json!({"kind": "ssh-private-key", "credentialId": "ssh-1", "username": "deploy",
                "publicKeyConfigured": false, "privateKeyConfigured": false})
        );
    }

    #[test]
    fn the_time_of_deactivation_shows_while_the_spec_says_inactive() {
        let at = Timestamp::from_second(1_900_000_000).unwrap();
        let stamped = |lifecycle| {
            let mut server = server(lifecycle);
            server.status = Some(berth_crds::server::ServerStatus {
                lifecycle_status: Some(ServerLifecycle::Inactive),
                deactivated_at: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at)),
                ..Default::default()
            });
            record(&server, None)
        };
        let inactive = stamped(ServerLifecycle::Inactive);
        assert_eq!(
            inactive.deactivated_at.as_deref(),
            Some("2030-03-17T17:46:40Z")
        );
        assert_eq!(summary(&inactive).deactivated_at, inactive.deactivated_at);
        // Activated a moment ago: the controller has not cleared its stamp yet.
        assert_eq!(stamped(ServerLifecycle::Active).deactivated_at, None);
        // Deactivated a moment ago: the controller has not stamped it yet.
        assert_eq!(
            record(&server(ServerLifecycle::Inactive), None).deactivated_at,
            None
        );
    }
}
