//! Spec §4.8, terminal sessions: `POST /terminal-sessions` checks the server, logs in over SSH
//! and returns the Terminal session record; its `transport.path` is a WebSocket that bridges to a
//! PTY shell on the server (protocol in [`bridge`]). Appaloft's lifecycle routes list, show and
//! close the caller's sessions ([`lifecycle`]).
//!
//! A session id is single-use, expires [`CONNECT_WITHIN`] after creation, and only the user and
//! login session that created it may connect (the WebSocket request carries the same bearer
//! token, as `Authorization` or, since browsers cannot set headers on a WebSocket,
//! `?access_token=`). Sessions live in the observation store ([`pending`], then `opened`), so
//! the WebSocket, the list and a close may reach any shim replica behind the Service; a
//! connected session's shell lives on the replica that bridges it
//! ([`Bridged`](crate::services::terminals::bridged::Bridged)).

mod bridge;
mod lifecycle;

use std::sync::Arc;

use axum::extract::ws::{WebSocketUpgrade, rejection::WebSocketUpgradeRejection};
use axum::extract::{FromRequestParts, Path, State};
use axum::http::HeaderValue;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::response::Response;
use berth_crds::member::OrganizationRole;
use berth_crds::server::Server;
use berth_remote::{RemoteError, ServerConnection};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::{Caller, bearer};
use crate::domain::fields::bounded;
use crate::domain::servers;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::services::server_access::{self, server_id};
use crate::services::terminals::pending::{self, Claim, Creator, Pending};
use crate::services::terminals::{
    CONNECT_WITHIN, ContainerProgram, ContainerShell, ListedSession, MAX_OPEN_PER_SERVER,
    TerminalSessionStatus, too_many,
};
use crate::state::AppState;
use crate::token::new_id;

pub use self::bridge::{ClientMessage, ServerMessage, TerminalProtocol};
pub use berth_api::terminal::{
    CreateTerminalSession, TerminalScope, TerminalSessionRecord, Transport,
};

pub use berth_api::terminal::{
    CloseTerminalSession, LIST_SCHEMA, SHOW_SCHEMA, SessionList, TerminalSessionClosed,
    TerminalSessionDetail, TerminalSessionFilters,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateTerminalSession, TerminalSessionRecord, _, _>(
            "/terminal-sessions",
            "Open an interactive shell on a server (admin); connect to transport.path within 60 s",
            create,
        ),
        Endpoint::get::<SessionList, _, _>(
            "/terminal-sessions",
            "The caller's terminal sessions in this organization, newest first, on every \
             replica: active (waiting for their WebSocket, or connected) or closing; \
             narrowed by scope, serverId, resourceId, deploymentId, sandboxId and limit \
             (1-200, default 50)",
            lifecycle::list,
        )
        .query::<TerminalSessionFilters>(),
        Endpoint::get::<TerminalSessionDetail, _, _>(
            "/terminal-sessions/{sessionId}",
            "One of the caller's terminal sessions, active or closing (404 once closed)",
            lifecycle::show,
        ),
        Endpoint::post::<CloseTerminalSession, TerminalSessionClosed, _, _>(
            "/terminal-sessions/{sessionId}/close",
            "Close one of the caller's terminal sessions, whichever replica bridges it: a \
             waiting one can no longer be connected, a connected one's shell ends and its \
             WebSocket closes. Closing it again answers the same",
            lifecycle::close,
        ),
        Endpoint::get::<TerminalProtocol, _, _>(
            "/terminal-sessions/{sessionId}/ws",
            "WebSocket of a terminal session (single use: open transport.path as returned, \
             with its ?ticket=, or with the create call's bearer token as Authorization). Client to server: binary frames are keystrokes; \
             text frames are JSON {\"type\":\"input\",\"data\":\"…\"} or \
             {\"type\":\"resize\",\"rows\":R,\"cols\":C}. Server to client: binary frames are \
             terminal output; text frames are JSON {\"type\":\"ready\"|\"exit\"|\"error\",…}; \
             the socket closes when the shell exits",
            connect,
        ),
    ]
}

/// Row and column limits (spec §8); also what a resize may ask for.
pub const ROWS: (i64, i64) = (10, 120);
pub const COLS: (i64, i64) = (20, 320);
const DEFAULT_ROWS: i64 = 24;
const DEFAULT_COLS: i64 = 80;
const MAX_DIRECTORY: usize = 512;

/// `initialRows` / `initialCols`: an integer within `range`, or `default`.
fn dimension(field: &str, value: Option<i64>, range: (i64, i64), default: i64) -> ApiResult<u32> {
    let value = value.unwrap_or(default);
    if !(range.0..=range.1).contains(&value) {
        return Err(ApiError::validation(
            field,
            format!("{field} must be an integer from {} to {}", range.0, range.1),
        )
        .with_detail("min", range.0)
        .with_detail("max", range.1));
    }
    Ok(value as u32)
}

/// A directory below the home directory: relative, without `..` or control characters. `.` and
/// empty segments are dropped; `None` is the home directory itself.
pub fn relative_directory(value: &str) -> ApiResult<Option<String>> {
    const FIELD: &str = "relativeDirectory";
    bounded(FIELD, value, MAX_DIRECTORY)?;
    if value.starts_with('/') || value.starts_with('~') {
        return Err(ApiError::validation(
            FIELD,
            "relativeDirectory must be relative to the home directory, not absolute",
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(ApiError::validation(
            FIELD,
            "relativeDirectory may not contain control characters",
        ));
    }
    let segments: Vec<&str> = value
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if segments.contains(&"..") {
        return Err(ApiError::validation(
            FIELD,
            "relativeDirectory may not contain `..`: it must stay inside the home directory",
        ));
    }
    Ok((!segments.is_empty()).then(|| segments.join("/")))
}

/// The command run instead of a plain login shell: `cd` into the directory, then the user's
/// login shell. The directory is single-quoted, so nothing in it is expanded.
pub fn shell_command(directory: &str) -> String {
    let quoted = directory.replace('\'', r"'\''");
    format!(r#"cd -- "$HOME"/'{quoted}' && exec "${{SHELL:-/bin/sh}}" -l"#)
}

/// A remote failure while opening a terminal.
fn remote_error(error: RemoteError) -> ApiError {
    server_access::remote_error("open a terminal", error)
}

/// The server's SSH connection in this process, logged in with its credential's current key.
async fn connection(state: &AppState, server: &Server) -> ApiResult<Arc<ServerConnection>> {
    let credentials = &state.caches.ssh_credentials;
    state
        .terminals
        .connection(&state.client, credentials, server)
        .await
}

/// The path of the WebSocket under the public API URL (which ends in `/api`).
fn websocket_path(state: &AppState, session_id: &str) -> String {
    let url = &state.config.public_url;
    let path = url
        .split_once("://")
        .map(|(_, rest)| rest.find('/').map(|at| &rest[at..]).unwrap_or(""))
        .unwrap_or(url.as_str())
        .trim_end_matches('/');
    format!("{path}/terminal-sessions/{session_id}/ws")
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateTerminalSession>,
) -> ApiResult<Json<TerminalSessionRecord>> {
    let (user_id, _, login_session_id) = caller.require_user()?;
    let organization = caller.require_role(OrganizationRole::Admin)?;
    let Target {
        server,
        container,
        deployment_id,
    } = target(&state, &caller, &body).await?;
    let directory = body
        .relative_directory
        .as_deref()
        .map(relative_directory)
        .transpose()?
        .flatten();
    let rows = dimension("initialRows", body.initial_rows, ROWS, DEFAULT_ROWS)?;
    let cols = dimension("initialCols", body.initial_cols, COLS, DEFAULT_COLS)?;
    let id = server_id(&server);
    if state.terminals.open_count(&id).await >= MAX_OPEN_PER_SERVER {
        return Err(too_many());
    }
    // Logging in now reports a bad key or host key as an error here, not as a closed socket.
    connection(&state, &server).await?;
    state.terminals.clone().close_when_idle(id);
    let session_id = new_id("trm");
    let created = Timestamp::now();
    let ticket = crate::token::generate("btt_");
    let path = websocket_path(&state, &session_id);
    let record = TerminalSessionRecord {
        transport: Transport {
            kind: "websocket".into(),
            path: format!("{path}?ticket={ticket}"),
        },
        session_id: session_id.clone(),
        scope: body.scope.kind.clone(),
        server_id: server.name_any(),
        resource_id: body
            .scope
            .resource_id
            .clone()
            .filter(|_| container.is_some()),
        deployment_id,
        dependency_resource_id: body
            .scope
            .dependency_resource_id
            .clone()
            .filter(|_| body.scope.kind == "dependency"),
        container_id: container.as_ref().map(|c| c.container_id.clone()),
        provider_key: server.spec.provider_key.clone(),
        working_directory: directory.as_ref().map(|d| format!("~/{d}")),
        created_at: created.to_string(),
        expires_at: (created + CONNECT_WITHIN).to_string(),
    };
    let pending = Pending {
        namespace: organization.namespace.clone(),
        server_id: server.name_any(),
        rows,
        cols,
        directory,
        container,
        listed: listed(&record, path),
    };
    let creator = Creator {
        user_id: user_id.to_string(),
        login_session_id: login_session_id.to_string(),
        created_ms: created.as_millisecond(),
    };
    let stored =
        pending::record(&session_id, &creator, &ticket, &pending).map_err(ApiError::internal)?;
    pending::insert(&state.observations, stored).await?;
    tracing::info!(session = %session_id, server = %server.name_any(), user = %user_id, "terminal session created");
    Ok(Json(record))
}

/// How `GET /terminal-sessions` lists a created session: its record with `path`, the
/// WebSocket's path without the ticket (the listing must not hand out the ticket), `active`.
fn listed(record: &TerminalSessionRecord, path: String) -> ListedSession {
    ListedSession {
        session_id: record.session_id.clone(),
        scope: record.scope.clone(),
        server_id: record.server_id.clone(),
        resource_id: record.resource_id.clone(),
        deployment_id: record.deployment_id.clone(),
        dependency_resource_id: record.dependency_resource_id.clone(),
        transport: Transport {
            kind: record.transport.kind.clone(),
            path,
        },
        provider_key: record.provider_key.clone(),
        working_directory: record.working_directory.clone(),
        status: TerminalSessionStatus::Active,
        created_at: record.created_at.clone(),
    }
}

/// An id the scope needs: present and of a bounded length.
fn required_id<'a>(field: &str, value: Option<&'a str>) -> ApiResult<&'a str> {
    let id = value.ok_or_else(|| ApiError::validation(field, format!("{field} is required")))?;
    bounded(field, id, 253)?;
    Ok(id)
}

/// Where a terminal runs.
struct Target {
    server: Arc<Server>,
    /// The container of a `resource` or `dependency` terminal.
    container: Option<ContainerShell>,
    /// The deployment whose container a `resource` terminal runs in, when its container says.
    deployment_id: Option<String>,
}

/// The server a terminal runs on and, for scope `resource` or `dependency`, the container it
/// runs in.
async fn target(
    state: &AppState,
    caller: &Caller,
    body: &CreateTerminalSession,
) -> ApiResult<Target> {
    let scope = &body.scope;
    match scope.kind.as_str() {
        "server" => {
            let id = required_id("scope.serverId", scope.server_id.as_deref())?;
            if scope.resource_id.is_some() {
                return Err(ApiError::validation(
                    "scope.resourceId",
                    "scope.resourceId belongs to scope.kind resource",
                ));
            }
            Ok(Target {
                server: servers::lookup(state, caller, id)?,
                container: None,
                deployment_id: None,
            })
        }
        "resource" => {
            let id = required_id("scope.resourceId", scope.resource_id.as_deref())?;
            if body.relative_directory.is_some() {
                return Err(ApiError::validation(
                    "relativeDirectory",
                    "relativeDirectory applies to server terminals; a resource terminal \
                     starts in the container's working directory",
                ));
            }
            let resource = crate::domain::resource_access::lookup(state, caller, id)?;
            let (server, container_id, deployment_id) = serving_container(state, &resource).await?;
            let docker_socket = server.spec.docker_socket_path.clone();
            let shell = ContainerShell {
                container_id,
                docker_socket,
                program: ContainerProgram::Shell,
            };
            Ok(Target {
                server,
                container: Some(shell),
                deployment_id,
            })
        }
        "dependency" => {
            let field = "scope.dependencyResourceId";
            let id = required_id(field, scope.dependency_resource_id.as_deref())?;
            if body.relative_directory.is_some() {
                return Err(ApiError::validation(
                    "relativeDirectory",
                    "relativeDirectory applies to server terminals",
                ));
            }
            let (server, shell) = database_client(state, caller, id)?;
            Ok(Target {
                server,
                container: Some(shell),
                deployment_id: None,
            })
        }
        _ => Err(ApiError::validation(
            "scope.kind",
            "scope.kind must be server, resource or dependency",
        )),
    }
}

/// The server of a managed database and its client in the database's container; 409 when it
/// is imported (Berth does not run it) or not ready.
fn database_client(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<(Arc<Server>, ContainerShell)> {
    use berth_crds::dependency_resource::{
        DependencyKind, DependencyLifecycleStatus, DependencySource, network_name,
    };
    let dependency = crate::domain::dependency_resources::lookup(state, caller, id)?;
    if dependency.spec.source != DependencySource::Managed {
        return Err(ApiError::conflict(format!(
            "dependency resource {id} is imported: Berth runs no container of it to connect in"
        )));
    }
    let status = dependency.status.as_ref();
    if status.and_then(|s| s.lifecycle_status) != Some(DependencyLifecycleStatus::Ready) {
        return Err(ApiError::conflict(format!(
            "dependency resource {id} is not ready to connect to"
        )));
    }
    let namespace = dependency.namespace().unwrap_or_default();
    let server = crate::domain::objects::find_in(
        &state.caches.servers,
        &namespace,
        &dependency.spec.server_id,
        "server",
    )?;
    let program = match dependency.spec.kind {
        DependencyKind::Postgres => ContainerProgram::Psql,
        DependencyKind::Redis => ContainerProgram::RedisCli,
    };
    let shell = ContainerShell {
        container_id: network_name(&namespace, id),
        docker_socket: server.spec.docker_socket_path.clone(),
        program,
    };
    Ok((server, shell))
}

/// The resource's server and its running serving container (else its newest running one),
/// with the deployment the container says it is of; 409 when none runs.
async fn serving_container(
    state: &AppState,
    resource: &berth_crds::resource::Resource,
) -> ApiResult<(Arc<Server>, String, Option<String>)> {
    let namespace = resource.namespace().unwrap_or_default();
    let id = resource.name_any();
    let not_running = || {
        ApiError::conflict(format!(
            "resource {id} has no running container to open a terminal in; deploy or start it"
        ))
    };
    let server_name = resource.spec.server_id.clone().ok_or_else(not_running)?;
    let server =
        crate::domain::objects::find_in(&state.caches.servers, &namespace, &server_name, "server")
            .map_err(|_| not_running())?;
    let connection = connection(state, &server).await?;
    let docker =
        berth_remote::docker::docker_over_ssh(connection.clone(), &server.spec.docker_socket_path);
    let candidates =
        crate::domain::containers::resource_containers(&connection, &docker, &namespace, &id)
            .await
            .map_err(remote_error)?;
    let serving = resource
        .status
        .as_ref()
        .and_then(|s| s.last_route_realization_deployment_id.as_deref());
    let container = crate::domain::containers::choose(&candidates, None, serving)
        .filter(|c| c.running)
        .ok_or_else(not_running)?;
    Ok((
        server,
        container.id.clone(),
        container.deployment_id.clone(),
    ))
}

/// Who opens a WebSocket: the session's single-use `?ticket=` (so no token goes in a URL),
/// else the caller's bearer token as `Authorization` or `?access_token=`.
pub enum SocketAuth {
    Ticket(String),
    Caller(Box<Caller>),
}

impl FromRequestParts<AppState> for SocketAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let query = QueryParams::from_request_parts(parts, state).await?;
        known_params(&query, &["access_token", "ticket"])?;
        if let Some(ticket) = query.string("ticket")? {
            return Ok(Self::Ticket(ticket.to_string()));
        }
        if bearer(parts).is_none()
            && let Some(token) = query.string("access_token")?
        {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| ApiError::unauthenticated("the access token is not valid"))?;
            parts.headers.insert(AUTHORIZATION, value);
        }
        let caller = Caller::from_request_parts(parts, state).await?;
        Ok(Self::Caller(Box::new(caller)))
    }
}

/// The pending session `id` and its creator as a caller: by ticket, or by the creator's
/// own token (then only the user and login session that created it may take it).
async fn claim(state: &AppState, id: &str, auth: SocketAuth) -> ApiResult<(Pending, Caller)> {
    let gone = || ApiError::not_found("terminal session", id);
    match auth {
        SocketAuth::Ticket(ticket) => {
            let (login_session_id, pending) =
                pending::take(&state.observations, id, Claim::Ticket(ticket))
                    .await?
                    .ok_or_else(gone)?;
            let caller = crate::auth::caller_of_session(state, &login_session_id)?;
            Ok((pending, caller))
        }
        SocketAuth::Caller(caller) => {
            let (user_id, _, login_session_id) = caller.require_user()?;
            let creator = Claim::Creator {
                user_id: user_id.to_string(),
                login_session_id: login_session_id.to_string(),
            };
            let (_, pending) = pending::take(&state.observations, id, creator)
                .await?
                .ok_or_else(gone)?;
            Ok((pending, *caller))
        }
    }
}

async fn connect(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    auth: SocketAuth,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let upgrade = upgrade.map_err(|rejection| {
        ApiError::malformed(format!(
            "this endpoint expects a WebSocket upgrade: {rejection}"
        ))
    })?;
    let gone = || ApiError::not_found("terminal session", &session_id);
    let (pending, caller) = claim(&state, &session_id, auth).await?;
    // Taken: from here, however this ends, the session is recorded closed when this is dropped.
    let bridged = state.terminals.bridge(&state.observations, &session_id);
    let (user_id, _, _) = caller.require_user()?;
    // The role and the server are checked again: either may have changed in the meantime.
    let organization = caller.require_role(OrganizationRole::Admin)?;
    if organization.namespace != pending.namespace {
        return Err(gone());
    }
    let server = servers::lookup(&state, &caller, &pending.server_id)?;
    let slot = state.terminals.reserve(&server_id(&server)).await?;
    let connection = connection(&state, &server).await?;
    let command = match &pending.container {
        Some(container) => Some(container.command()),
        None => pending.directory.as_deref().map(shell_command),
    };
    let channel = connection
        .open_terminal(pending.cols, pending.rows, command.as_deref())
        .await
        .map_err(remote_error)?;
    let session = bridge::Session {
        id: session_id,
        server_id: pending.server_id,
        user_id: user_id.to_string(),
        rows: pending.rows,
        cols: pending.cols,
    };
    tracing::info!(session = %session.id, server = %session.server_id, user = %session.user_id, "terminal session connected");
    Ok(upgrade.on_upgrade(move |socket| async move {
        let close_asked = bridged.close_asked();
        bridge::run(
            socket,
            channel,
            session,
            slot,
            || bridged.closing(),
            close_asked,
        )
        .await;
        drop(bridged);
    }))
}

#[cfg(test)]
mod tests;
