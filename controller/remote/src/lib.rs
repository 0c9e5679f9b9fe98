//! Remote access to servers (DESIGN §4): one SSH connection per server with channels multiplexed
//! over it, Docker through `direct-streamlocal` channels, the edge proxy's admin API the same way.
//! Berth never spawns `ssh` or `docker`.

pub mod client_key;
pub mod connection;
pub mod credential_key;
pub mod dns;
pub mod docker;
pub mod edge_failures;
pub mod edge_proxy;
pub mod edge_tls;
pub mod error;
pub mod facts;
pub mod host_key;
pub mod labelled;
pub mod pool;
pub mod server_address;
pub mod tally;

use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Kind of SSH channel: `exec` (a command run on the server), `socket` (Docker or the proxy's
/// admin API), `tcp` (a probe of a container), `terminal`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChannelLabel {
    pub kind: &'static str,
}

/// SSH channels opened, by kind, in this process: what servers pay for Berth's attention.
pub static CHANNELS_OPENED: LazyLock<Family<ChannelLabel, Counter>> =
    LazyLock::new(Family::default);

/// `value` in single quotes for the server's shell: one word, nothing expanded.
pub fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

pub(crate) fn count_channel(kind: &'static str) {
    CHANNELS_OPENED.get_or_create(&ChannelLabel { kind }).inc();
}

pub use client_key::{ClientKey, ClientKeyError};
pub use connection::{CommandOutput, Endpoint, ServerConnection, Timeouts};
pub use credential_key::{KeyProblem, credential_key, key_from_secret, load_key};
pub use edge_proxy::{EdgeProxy, EdgeProxyNames, EdgeProxySettings, ProxyChange, edge_config};
pub use error::RemoteError;
pub use pool::{PoolSettings, ServerConnectionPool, ServerId, SessionLease};
pub use server_address::{ServerAddress, endpoint, pinned_host_key, server_id};
