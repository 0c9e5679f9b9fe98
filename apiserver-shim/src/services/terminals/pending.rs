//! Pending terminal sessions in the observation store, which every shim replica shares: the
//! replica a session is created on and the one its WebSocket reaches need not be the same.
//! The store keeps the ticket's digest only; what the session opens is its `detail` JSON.
//! Taking a session moves it to the [`opened`](super::opened) ones; so does closing it.

use std::sync::Arc;

use berth_observations::{PendingTerminal, ShimStore, TerminalClaim};
use serde::{Deserialize, Serialize};

use super::{
    CONNECT_WITHIN, ContainerShell, ListedSession, MAX_PENDING_PER_USER, TerminalSessionStatus,
    forget_before, lease_from,
};
use crate::error::{ApiError, ApiResult};
use crate::observation_store::store_call;
use crate::token::digest;

/// What `store_call` names when the store fails.
const WHAT: &str = "terminal sessions";

/// A created session waiting for its WebSocket: what opening it needs, and how it is listed.
/// Not a wire record: serialized only into the observation store, between shim replicas.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub namespace: String,
    pub server_id: String,
    pub rows: u32,
    pub cols: u32,
    pub directory: Option<String>,
    /// The container of a `resource` terminal.
    pub container: Option<ContainerShell>,
    /// What `GET /terminal-sessions` shows of it.
    pub listed: ListedSession,
}

/// A session's creator, and where it was created.
pub struct Creator {
    pub user_id: String,
    pub login_session_id: String,
    /// Creation time, in Unix milliseconds.
    pub created_ms: i64,
}

/// Who takes a pending session: owned, so the claim can go to a blocking thread.
pub enum Claim {
    /// The session's ticket, as the WebSocket URL carried it.
    Ticket(String),
    /// The user and login session that created it, by their bearer token.
    Creator {
        user_id: String,
        login_session_id: String,
    },
}

/// The store's record of `pending`: the ticket only as its digest, expiring
/// [`CONNECT_WITHIN`] after creation.
pub fn record(
    id: &str,
    creator: &Creator,
    ticket: &str,
    pending: &Pending,
) -> Result<PendingTerminal, serde_json::Error> {
    let within = i64::try_from(CONNECT_WITHIN.as_millis()).unwrap_or(i64::MAX);
    Ok(PendingTerminal {
        id: id.to_string(),
        user_id: creator.user_id.clone(),
        login_session_id: creator.login_session_id.clone(),
        ticket_digest: digest(ticket),
        created_ms: creator.created_ms,
        expires_ms: creator.created_ms.saturating_add(within),
        detail: serde_json::to_string(pending)?,
    })
}

/// A stored record back into the session it holds.
fn pending(record: &PendingTerminal) -> Result<Pending, serde_json::Error> {
    from_detail(&record.id, &record.detail)
}

/// Session `id` from the `detail` it was stored with, `active`: waiting for its WebSocket has
/// no state of its own in Appaloft's vocabulary.
pub fn from_detail(id: &str, detail: &str) -> Result<Pending, serde_json::Error> {
    let mut pending: Pending = serde_json::from_str(detail)?;
    pending.listed.session_id = id.to_string();
    pending.listed.status = TerminalSessionStatus::Active;
    Ok(pending)
}

/// Stores a created session; 429 when its creator has [`MAX_PENDING_PER_USER`] waiting
/// already. Sessions expired meanwhile, or closed long enough ago (of anyone), are removed on
/// the way.
pub async fn insert(store: &Arc<dyn ShimStore>, record: PendingTerminal) -> ApiResult<()> {
    let now = berth_observations::now_ms();
    let stored = store_call(store, WHAT, move |store| {
        store.prune_pending_terminals(now)?;
        store.prune_opened_terminals(forget_before(now))?;
        store.insert_pending_terminal(&record, MAX_PENDING_PER_USER, now)
    })
    .await?;
    if !stored {
        return Err(ApiError::rate_limited(
            "too many terminal sessions waiting for their WebSocket; connect or wait a minute",
            CONNECT_WITHIN.as_secs(),
        ));
    }
    Ok(())
}

/// Takes session `id` if `claim` fits it and it has not expired, whichever replica created
/// it, and records it opened (`active`) under this replica's lease; returns the login session
/// that created it, and the session. A claim that does not fit takes nothing.
pub async fn take(
    store: &Arc<dyn ShimStore>,
    id: &str,
    claim: Claim,
) -> ApiResult<Option<(String, Pending)>> {
    let id = id.to_string();
    let now = berth_observations::now_ms();
    let lease = lease_from(now);
    let taken = store_call(store, WHAT, move |store| match &claim {
        // The store compares digests: no ticket sits in it, nor in its statements.
        Claim::Ticket(ticket) => {
            let digest = digest(ticket);
            let claim = TerminalClaim::Ticket { digest: &digest };
            store.take_pending_terminal(&id, claim, now, lease)
        }
        Claim::Creator {
            user_id,
            login_session_id,
        } => {
            let creator = TerminalClaim::Creator {
                user_id,
                login_session_id,
            };
            store.take_pending_terminal(&id, creator, now, lease)
        }
    })
    .await?;
    let Some(record) = taken else {
        return Ok(None);
    };
    let pending = pending(&record).map_err(ApiError::internal)?;
    Ok(Some((record.login_session_id, pending)))
}

/// Closes the user's session `id` while it waits (it is recorded closed, and its WebSocket can
/// no longer take it); false when it is not waiting (any more).
pub async fn close(store: &Arc<dyn ShimStore>, id: &str, user_id: &str) -> ApiResult<bool> {
    let (id, user) = (id.to_string(), user_id.to_string());
    let now = berth_observations::now_ms();
    let closed = store_call(store, WHAT, move |store| {
        store.close_pending_terminal(&id, &user, now)
    })
    .await?;
    Ok(closed.is_some())
}

/// The user's session `id`, if it waits for its WebSocket.
pub async fn find(
    store: &Arc<dyn ShimStore>,
    id: &str,
    user_id: &str,
) -> ApiResult<Option<Pending>> {
    Ok(of_user(store, user_id)
        .await?
        .into_iter()
        .find(|pending| pending.listed.session_id == id))
}

/// The user's sessions waiting for their WebSocket, on any replica.
pub async fn of_user(store: &Arc<dyn ShimStore>, user_id: &str) -> ApiResult<Vec<Pending>> {
    let user = user_id.to_string();
    let now = berth_observations::now_ms();
    let records = store_call(store, WHAT, move |store| {
        store.pending_terminals(&user, now)
    })
    .await?;
    Ok(records
        .iter()
        .filter_map(|record| match pending(record) {
            Ok(pending) => Some(pending),
            // A detail this shim cannot read (a newer replica's): listed by the one that can.
            Err(error) => {
                tracing::warn!(session = %record.id, %error, "a pending terminal session could not be read");
                None
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Pending {
        Pending {
            namespace: "org-a".into(),
            server_id: "srv-1".into(),
            rows: 24,
            cols: 80,
            directory: Some("work/app".into()),
            container: Some(ContainerShell {
                container_id: "abc123".into(),
                docker_socket: "/var/run/docker.sock".into(),
                program: Default::default(),
            }),
            listed: ListedSession {
                session_id: "trm-1".into(),
                scope: "resource".into(),
                server_id: "srv-1".into(),
                resource_id: Some("res-1".into()),
                deployment_id: Some("dep-1".into()),
                dependency_resource_id: None,
                transport: berth_api::terminal::Transport {
                    kind: "websocket".into(),
                    path: "/api/terminal-sessions/trm-1/ws".into(),
                },
                provider_key: "generic-ssh".into(),
                working_directory: None,
                status: TerminalSessionStatus::Active,
                created_at: "2030-01-01T00:00:00Z".into(),
            },
        }
    }

    #[test]
    fn a_stored_session_keeps_its_ticket_as_a_digest_and_comes_back_as_created() {
        let creator = Creator {
            user_id: "usr-a".into(),
            login_session_id: "sess-a".into(),
            created_ms: 1_000,
        };
        let ticket = "btt_secret-ticket";
        let stored = record("trm-1", &creator, ticket, &session()).unwrap();
        assert_eq!(stored.ticket_digest, digest(ticket));
        assert!(!format!("{stored:?}").contains("secret-ticket"));
        assert_eq!(stored.expires_ms - stored.created_ms, 60_000);
        assert_eq!(
            (stored.user_id.as_str(), stored.login_session_id.as_str()),
            ("usr-a", "sess-a")
        );
        assert_eq!(pending(&stored).unwrap(), session());
    }

    #[test]
    fn a_stored_session_is_listed_under_its_record_id_as_active() {
        let creator = Creator {
            user_id: "usr-a".into(),
            login_session_id: "sess-a".into(),
            created_ms: 1_000,
        };
        let mut stored = record("trm-1", &creator, "btt_x", &session()).unwrap();
        stored.id = "trm-2".into();
        let listed = pending(&stored).unwrap().listed;
        assert_eq!(
            (listed.session_id.as_str(), listed.status),
            ("trm-2", TerminalSessionStatus::Active)
        );
    }
}
