//! Git sources (DESIGN §5a'). Berth fetches repositories itself, with gix: nothing to install
//! on servers, no `git` or `ssh` binary spawned. A [`SourceCache`] keeps one bare copy per
//! repository (shallow: the commits asked for, not the history), fetches into it over
//!
//! - HTTPS or HTTP (reqwest, the TLS stack Berth uses everywhere),
//! - SSH (russh through `berth-remote`, with a deploy key and the host key checked against a
//!   pin before the key is offered),
//! - `git://` (gix's own client),
//!
//! or reads a repository on the controller's disk directly, and exports a commit's tree (or a
//! directory of it) as the folder a build uploads.

#![forbid(unsafe_code)]

mod cache;
mod checkout;
mod error;
mod fetch;
mod transport;

pub use berth_vocabulary::repository::{GitTransport, RepoLocator};
pub use cache::{FetchRequest, Fetched, SourceCache, SshAccess};
pub use checkout::Exported;
pub use error::SourceError;
pub use fetch::CommitInfo;
