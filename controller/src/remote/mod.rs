//! Remote access to servers (DESIGN §4): one SSH connection per server with channels multiplexed
//! over it, Docker through `direct-streamlocal` channels, the edge proxy's admin API the same way.
//! Berth never spawns `ssh` or `docker`.

pub mod client_key;
pub mod connection;
pub mod docker;
pub mod edge_proxy;
pub mod error;
pub mod facts;
pub mod host_key;
pub mod pool;

pub use client_key::{ClientKey, ClientKeyError};
pub use connection::{Endpoint, ServerConnection, Timeouts};
pub use edge_proxy::{EdgeProxy, EdgeProxyNames, EdgeProxySettings, ProxyChange, edge_config};
pub use error::RemoteError;
pub use pool::{PoolSettings, ServerConnectionPool, ServerId, SessionLease};
