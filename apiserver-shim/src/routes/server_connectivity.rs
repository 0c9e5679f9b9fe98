//! Connectivity tests, on Appaloft's routes and shape: `POST /servers/connectivity-tests` tries
//! a host and credential before anything is registered (TCP, the SSH handshake with the host
//! key to pin, authentication, Docker), and `POST /servers/{id}/connectivity-tests` the same
//! for a registered server against its pinned key. Nothing is stored; keys never leave.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use berth_api::servers::{DraftConnectivityTest, DraftCredential, DraftServer, NoBody};
use berth_crds::limits::{NAME_MAX, OBJECT_NAME_MAX};
use berth_remote::{ClientKey, Endpoint as SshEndpoint, RemoteError, ServerConnection, Timeouts};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::credentials::parse_key;
use crate::domain::fields::bounded;
use crate::domain::objects::find_in;
use crate::domain::servers::{lookup, writer};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::servers::{Check, ConnectivityReport};

/// How long each step may take: a test answers within seconds, not a minute.
const STEP_TIMEOUT: Duration = Duration::from_secs(8);
/// Prints the Docker daemon's version, or fails when there is none.
const DOCKER_VERSION: &str = "docker version --format '{{.Server.Version}}'";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<DraftConnectivityTest, ConnectivityReport, _, _>(
            "/servers/connectivity-tests",
            "Test a host and credential before registering them (nothing is stored)",
            test_draft,
        ),
        Endpoint::post::<NoBody, ConnectivityReport, _, _>(
            "/servers/{serverId}/connectivity-tests",
            "Test a registered server's connection against its pinned host key",
            test_registered,
        ),
    ]
}

/// Where to connect and as whom.
struct Target {
    endpoint: SshEndpoint,
    key: ClientKey,
    pinned: Option<String>,
}

fn check(name: &str, status: &str, message: String, took: Duration) -> Check {
    Check {
        name: name.into(),
        status: status.into(),
        message,
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        metadata: BTreeMap::new(),
    }
}

fn skipped(name: &str) -> Check {
    check(
        name,
        "skipped",
        "an earlier check failed".into(),
        Duration::ZERO,
    )
}

/// The checks a failed login leaves: which step failed, and why, in order.
fn failed_login(error: &RemoteError, took: Duration) -> Vec<Check> {
    let why = error.condition_message();
    match error {
        RemoteError::Connect { .. } => vec![
            check("tcp", "failed", why, took),
            skipped("ssh-handshake"),
            skipped("authentication"),
            skipped("docker"),
        ],
        RemoteError::HostKeyMismatch { expected, got } => {
            let mut handshake = check("ssh-handshake", "failed", why.clone(), took);
            handshake
                .metadata
                .insert("hostKeyFingerprint".into(), got.clone());
            handshake
                .metadata
                .insert("expectedHostKeyFingerprint".into(), expected.clone());
            vec![
                check("tcp", "passed", "port open".into(), Duration::ZERO),
                handshake,
                skipped("authentication"),
                skipped("docker"),
            ]
        }
        RemoteError::AuthenticationRejected { .. } => vec![
            check("tcp", "passed", "port open".into(), Duration::ZERO),
            check(
                "ssh-handshake",
                "passed",
                "host key accepted".into(),
                Duration::ZERO,
            ),
            check("authentication", "failed", why, took),
            skipped("docker"),
        ],
        _ => vec![
            check("tcp", "passed", "port open".into(), Duration::ZERO),
            check("ssh-handshake", "failed", why, took),
            skipped("authentication"),
            skipped("docker"),
        ],
    }
}

/// Logs in and asks Docker for its version; every step reported.
async fn run_checks(target: &Target) -> Vec<Check> {
    let timeouts = Timeouts {
        connect: STEP_TIMEOUT,
        authenticate: STEP_TIMEOUT,
        channel_open: STEP_TIMEOUT,
        command: STEP_TIMEOUT,
        ..Timeouts::default()
    };
    let started = Instant::now();
    let opened = ServerConnection::open(
        &target.endpoint,
        &target.key,
        target.pinned.as_deref(),
        &timeouts,
    )
    .await;
    let connection = match opened {
        Ok(connection) => connection,
        Err(error) => return failed_login(&error, started.elapsed()),
    };
    let took = started.elapsed();
    let mut handshake = check("ssh-handshake", "passed", "host key accepted".into(), took);
    handshake.metadata.insert(
        "hostKeyFingerprint".into(),
        connection.host_key_fingerprint().to_string(),
    );
    let login = format!("logged in as {}", target.endpoint.username);
    let mut checks = vec![
        check("tcp", "passed", "port open".into(), Duration::ZERO),
        handshake,
        check("authentication", "passed", login, Duration::ZERO),
    ];
    let started = Instant::now();
    checks.push(match connection.exec(DOCKER_VERSION).await {
        Ok(output) if output.exit_status == Some(0) => {
            let version = output.stdout_text().trim().to_string();
            let mut docker = check(
                "docker",
                "passed",
                format!("Docker {version}"),
                started.elapsed(),
            );
            docker.metadata.insert("dockerVersion".into(), version);
            docker
        }
        Ok(output) => {
            let said = String::from_utf8_lossy(&output.stderr);
            let first = said.lines().next().unwrap_or("no output").to_string();
            let message = format!("`docker version` failed: {first}");
            check("docker", "failed", message, started.elapsed())
        }
        Err(error) => check(
            "docker",
            "failed",
            error.condition_message(),
            started.elapsed(),
        ),
    });
    checks
}

/// `healthy` when every check passed, `degraded` when only Docker failed, else `unreachable`.
fn overall(checks: &[Check]) -> &'static str {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c.status != "passed")
        .map(|c| c.name.as_str())
        .collect();
    match failed.as_slice() {
        [] => "healthy",
        ["docker"] => "degraded",
        _ => "unreachable",
    }
}

/// The key and login name a draft names: a stored credential or a key submitted now.
fn draft_key(server: &DraftServer) -> ApiResult<(CredentialSource, Option<String>)> {
    match (&server.credential_id, &server.credential) {
        (Some(_), Some(_)) => Err(ApiError::validation(
            "server.credential",
            "give server.credentialId or server.credential, not both",
        )),
        (Some(id), None) => {
            bounded("server.credentialId", id, OBJECT_NAME_MAX)?;
            Ok((CredentialSource::Stored(id.clone()), None))
        }
        (
            None,
            Some(DraftCredential::StoredSshPrivateKey {
                credential_id,
                username,
            }),
        ) => {
            bounded(
                "server.credential.credentialId",
                credential_id,
                OBJECT_NAME_MAX,
            )?;
            Ok((
                CredentialSource::Stored(credential_id.clone()),
                username.clone(),
            ))
        }
        (
            None,
            Some(DraftCredential::SshPrivateKey {
                private_key,
                username,
                ..
            }),
        ) => {
            let key = parse_key("server.credential.privateKey", private_key)?;
            Ok((CredentialSource::Key(Box::new(key)), username.clone()))
        }
        (None, Some(DraftCredential::LocalSshAgent { .. })) => Err(ApiError::validation(
            "server.credential.kind",
            "local-ssh-agent is not available to a server-side platform; use \
             ssh-private-key or stored-ssh-private-key",
        )),
        (None, None) => Err(ApiError::validation(
            "server.credentialId",
            "server.credentialId or server.credential is required",
        )),
    }
}

enum CredentialSource {
    Stored(String),
    Key(Box<ClientKey>),
}

/// The stored credential's key and username, or a 4xx naming `field`.
async fn stored_key(
    state: &AppState,
    namespace: &str,
    id: &str,
    field: &str,
) -> ApiResult<(ClientKey, Option<String>)> {
    let credential = find_in(
        &state.caches.ssh_credentials,
        namespace,
        id,
        "SSH credential",
    )
    .map_err(|_| ApiError::validation(field, format!("{field}: no SSH credential {id}")))?;
    let key = berth_remote::load_key(&state.client, &credential)
        .await
        .map_err(|error| ApiError::unavailable(format!("cannot read the SSH key: {error}")))?
        .map_err(|problem| {
            ApiError::validation(
                field,
                format!("SSH credential {id} is not usable: {}", problem.message()),
            )
        })?;
    Ok((key, credential.spec.username.clone()))
}

async fn test_draft(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<DraftConnectivityTest>,
) -> ApiResult<Json<ConnectivityReport>> {
    let namespace = writer(&caller)?.namespace.clone();
    let server = body.server;
    bounded("server.host", server.host.trim(), OBJECT_NAME_MAX)?;
    if let Some(name) = &server.name {
        bounded("server.name", name, NAME_MAX)?;
    }
    if server.port == Some(0) {
        return Err(ApiError::validation(
            "server.port",
            "server.port must be 1-65535",
        ));
    }
    if let Some(pin) = &server.expected_host_key_fingerprint
        && !pin.starts_with("SHA256:")
    {
        return Err(ApiError::validation(
            "server.expectedHostKeyFingerprint",
            "server.expectedHostKeyFingerprint must be SHA256:… as ssh-keygen -l prints it",
        ));
    }
    let (source, credential_user) = draft_key(&server)?;
    let (key, stored_user) = match source {
        CredentialSource::Stored(id) => {
            let field = "server.credentialId";
            let (key, user) = stored_key(&state, &namespace, &id, field).await?;
            (key, user)
        }
        CredentialSource::Key(key) => (*key, None),
    };
    let username = server
        .username
        .clone()
        .or(credential_user)
        .or(stored_user)
        .unwrap_or_else(|| "root".into());
    bounded("server.username", &username, 32)?;
    let target = Target {
        endpoint: SshEndpoint {
            host: server.host.trim().to_string(),
            port: server.port.unwrap_or(22),
            username,
        },
        key,
        pinned: server.expected_host_key_fingerprint.clone(),
    };
    let report = report(
        String::new(),
        server.name.unwrap_or_default(),
        server.provider_key,
        &target,
    )
    .await;
    Ok(Json(report))
}

async fn test_registered(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_): JsonBody<NoBody>,
) -> ApiResult<Json<ConnectivityReport>> {
    let server = lookup(&state, &caller, &id)?;
    let namespace = writer(&caller)?.namespace.clone();
    let field = "credentialId";
    let (key, _) = stored_key(&state, &namespace, &server.spec.credential_id, field).await?;
    let pinned = server
        .spec
        .expected_host_key_fingerprint
        .clone()
        .or_else(|| server.status.as_ref()?.host_key_fingerprint.clone());
    let target = Target {
        endpoint: SshEndpoint {
            host: server.spec.host.clone(),
            port: u16::try_from(server.spec.port).unwrap_or(22),
            username: server.spec.username.clone(),
        },
        key,
        pinned,
    };
    let name = server.spec.name.clone().unwrap_or_default();
    let provider = Some(server.spec.provider_key.clone());
    Ok(Json(report(id, name, provider, &target).await))
}

async fn report(
    server_id: String,
    name: String,
    provider_key: Option<String>,
    target: &Target,
) -> ConnectivityReport {
    let checks = run_checks(target).await;
    tracing::info!(host = %target.endpoint.host, status = overall(&checks), "connectivity test");
    ConnectivityReport {
        server_id,
        name,
        host: target.endpoint.host.clone(),
        port: target.endpoint.port,
        provider_key: provider_key.unwrap_or_else(|| "generic-ssh".into()),
        checked_at: k8s_openapi::jiff::Timestamp::now().to_string(),
        status: overall(&checks).into(),
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_step_skips_the_ones_after_it_and_names_the_outcome() {
        let refused = RemoteError::AuthenticationRejected {
            user: "root".into(),
            key_fingerprint: "SHA256:x".into(),
        };
        let checks = failed_login(&refused, Duration::from_millis(3));
        let statuses: Vec<&str> = checks.iter().map(|c| c.status.as_str()).collect();
        assert_eq!(statuses, ["passed", "passed", "failed", "skipped"]);
        assert_eq!(overall(&checks), "unreachable");
        let mismatch = RemoteError::HostKeyMismatch {
            expected: "SHA256:a".into(),
            got: "SHA256:b".into(),
        };
        let checks = failed_login(&mismatch, Duration::ZERO);
        assert_eq!(checks[1].metadata["hostKeyFingerprint"], "SHA256:b");
        let mut docker_only = checks.clone();
        for c in &mut docker_only {
            c.status = "passed".into();
        }
        docker_only[3].status = "failed".into();
        assert_eq!(overall(&docker_only), "degraded");
    }
}
