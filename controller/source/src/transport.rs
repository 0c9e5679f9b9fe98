//! The ways gix reaches a repository: our own HTTP client and SSH channel (so the TLS stack,
//! the SSH library and host-key pinning are Berth's), and gix's `git://` client.

mod http;
mod ssh;

use std::sync::Arc;

use berth_remote::ServerConnection;
use berth_vocabulary::repository::{GitTransport, RepoLocator};
use gix::protocol::transport::Protocol;
use gix::protocol::transport::client::blocking_io::Transport;
use tokio::runtime::Handle;

use crate::error::{SourceError, gix_error};

/// Everything a blocking fetch needs to open its transport.
pub struct Connect {
    repository: RepoLocator,
    runtime: Handle,
    /// The logged-in SSH connection of an `ssh` repository.
    ssh: Option<Arc<ServerConnection>>,
}

impl Connect {
    pub fn new(
        repository: &RepoLocator,
        runtime: Handle,
        ssh: Option<Arc<ServerConnection>>,
    ) -> Self {
        Self {
            repository: repository.clone(),
            runtime,
            ssh,
        }
    }

    /// Opens the transport; called on a blocking thread.
    pub fn open(&self) -> Result<Box<dyn Transport + Send>, SourceError> {
        let repository = &self.repository;
        match repository.transport {
            GitTransport::Https | GitTransport::Http => {
                let url = parse_url(&repository.http_url())?;
                let client = http::Client::new(self.runtime.clone())?;
                Ok(Box::new(
                    gix::protocol::transport::client::blocking_io::http::connect_http(
                        client,
                        url,
                        Protocol::V2,
                        false,
                    ),
                ))
            }
            GitTransport::Ssh => {
                let connection = self.ssh.clone().ok_or_else(|| {
                    SourceError::Local("an SSH repository needs its connection".into())
                })?;
                let channel = ssh::open(&self.runtime, connection, repository.remote_path())?;
                Ok(Box::new(channel))
            }
            GitTransport::Git => {
                let connection = gix::protocol::transport::client::git::blocking_io::connect(
                    &repository.host,
                    repository.remote_path().into(),
                    Protocol::V2,
                    repository.port,
                    false,
                )
                .map_err(|error| {
                    SourceError::Unreachable(format!(
                        "connecting to git://{}: {error}",
                        repository.host
                    ))
                })?;
                Ok(Box::new(connection))
            }
            GitTransport::Local => Err(SourceError::Local(
                "a local repository is read in place, not fetched".into(),
            )),
        }
    }
}

fn parse_url(url: &str) -> Result<gix::Url, SourceError> {
    gix::url::parse(gix::bstr::BStr::new(url))
        .map_err(|error| gix_error("reading the repository URL", error))
}
