//! Servers, SSH credentials and deployments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum Servers {
    /// List servers.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth servers list")]
    List,
    /// Show a server: reachability, host key, Docker, edge proxy.
    #[command(after_help = "Example:\n  berth servers show srv-abc")]
    Show { server: String },
    /// Register a server reached over SSH.
    #[command(
        after_help = "Example:\n  berth servers create --name edge --host 203.0.113.7 --credential cred-abc"
    )]
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        host: String,
        #[arg(long)]
        port: Option<u16>,
        #[arg(long)]
        username: Option<String>,
        /// SSH credential id.
        #[arg(long)]
        credential: String,
        /// Routes are `<slug>.<base domain>`.
        #[arg(long)]
        base_domain: Option<String>,
    },
    /// Test the connection to a registered server (against its pinned host key), or to a host
    /// before registering it: TCP, SSH handshake, login, Docker. Exits 1 unless every check
    /// passed.
    #[command(
        after_help = "Examples:\n  berth servers test srv-abc\n  berth servers test --host 203.0.113.7 --credential cred-abc --username deploy"
    )]
    Test {
        /// A registered server's id or name; without it, --host and --credential say what to
        /// test.
        #[arg(required_unless_present = "host", conflicts_with = "host")]
        server: Option<String>,
        #[command(flatten)]
        draft: DraftServerArgs,
    },
    /// Stop taking deployments (an inactive server may be deleted).
    #[command(after_help = "Example:\n  berth servers deactivate srv-abc")]
    Deactivate { server: String },
    /// Take deployments again.
    #[command(after_help = "Example:\n  berth servers activate srv-abc")]
    Activate { server: String },
    /// Rename a server (its display name; the id stays).
    #[command(after_help = "Example:\n  berth servers rename srv-abc edge-eu-1")]
    Rename { server: String, name: String },
    /// Docker's usage on a server, the organization's containers, and what is reclaimable.
    #[command(after_help = "Example:\n  berth servers capacity srv-abc")]
    Capacity { server: String },
    /// Remove the organization's stopped containers nothing serves from (lists them only,
    /// unless --apply).
    #[command(
        after_help = "Example:\n  berth servers prune srv-abc\n  berth servers prune srv-abc --apply"
    )]
    Prune {
        server: String,
        /// Remove them (without it, a dry run).
        #[arg(long)]
        apply: bool,
    },
    /// What stands in the way of deleting a server (it is not deleted).
    #[command(after_help = "Example:\n  berth servers delete-check srv-abc")]
    DeleteCheck { server: String },
    /// Delete an inactive server.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth servers delete srv-abc"
    )]
    Delete { server: String },
}

/// A host not registered yet, as `servers test` reaches it (nothing is stored).
#[derive(Args, Debug)]
pub struct DraftServerArgs {
    /// Host name or address.
    #[arg(long, requires = "credential")]
    pub host: Option<String>,
    /// SSH port (default 22).
    #[arg(long, requires = "host")]
    pub port: Option<u16>,
    /// SSH user (default: the credential's, else root).
    #[arg(long, requires = "host")]
    pub username: Option<String>,
    /// SSH credential id or name.
    #[arg(long, requires = "host")]
    pub credential: Option<String>,
    /// The host key the server must show (`SHA256:…`); another one fails the handshake.
    #[arg(long, requires = "host")]
    pub host_key: Option<String>,
}

/// Filters of `deployments list` and `count`.
#[derive(Args, Debug, Default)]
pub struct DeploymentFilters {
    /// Resource id, slug or name.
    #[arg(long)]
    pub resource: Option<String>,
    #[arg(long)]
    pub project: Option<String>,
    #[arg(long)]
    pub environment: Option<String>,
    #[arg(long)]
    pub server: Option<String>,
    /// created, planning, planned, running, cancel-requested, succeeded, failed, canceled or
    /// rolled-back.
    #[arg(long)]
    pub status: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Deployments {
    /// List attempts, newest first (also those the controller removed beyond the history
    /// limit).
    #[command(
        visible_alias = "ls",
        after_help = "Examples:\n  berth deployments list --resource web --status failed\n  berth deployments list --all -o json"
    )]
    List {
        #[command(flatten)]
        filters: DeploymentFilters,
        /// Attempts per page (1-500, default 50).
        #[arg(long)]
        limit: Option<u32>,
        /// Every page, not only the first.
        #[arg(long)]
        all: bool,
        /// After the list, print an attempt again each time it changes (from the change
        /// feed, no polling), as `kubectl get -w` does; Ctrl-C stops.
        #[arg(short, long)]
        watch: bool,
    },
    /// Count attempts.
    #[command(after_help = "Example:\n  berth deployments count --resource web")]
    Count {
        #[command(flatten)]
        filters: DeploymentFilters,
    },
    /// Show an attempt: status, step, error, image, commit, who started it.
    #[command(after_help = "Example:\n  berth deployments show dep-web-3")]
    Show { deployment: String },
    /// Print an attempt's timeline as it is recorded until it ends (exit 1 unless it
    /// succeeded); a broken connection resumes where it was.
    #[command(after_help = "Example:\n  berth deployments follow dep-web-3")]
    Follow { deployment: String },
    /// The evidence that an attempt serves: health check, route, a request through the edge.
    #[command(after_help = "Example:\n  berth deployments proof dep-web-3")]
    Proof { deployment: String },
    /// Cancel a running attempt: its build or health check stops, what serves stays.
    #[command(after_help = "Example:\n  berth deployments cancel dep-web-3")]
    Cancel { deployment: String },
    /// Run a failed or canceled attempt again (same source and commit).
    #[command(after_help = "Example:\n  berth deployments retry dep-web-3 --follow")]
    Retry {
        deployment: String,
        /// Follow the new attempt until it ends.
        #[arg(short, long)]
        follow: bool,
    },
    /// Serve an earlier succeeded attempt's image again (no rebuild).
    #[command(
        after_help = "Examples:\n  berth deployments rollback dep-web-5\n  berth deployments rollback dep-web-5 --to dep-web-2 --follow"
    )]
    Rollback {
        /// The attempt to roll back from (usually the serving one).
        deployment: String,
        /// The succeeded attempt to return to (default: the newest one before DEPLOYMENT).
        #[arg(long)]
        to: Option<String>,
        #[arg(short, long)]
        follow: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum Credentials {
    /// List SSH credentials.
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth credentials list"
    )]
    List,
    /// Show an SSH credential and the servers using it.
    #[command(after_help = "Example:\n  berth credentials show cred-abc")]
    Show { credential: String },
    /// Store an SSH private key.
    #[command(
        after_help = "Example:\n  berth credentials create --name ops --private-key-file ~/.ssh/id_ed25519"
    )]
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        private_key_file: PathBuf,
        #[arg(long)]
        username: Option<String>,
    },
    /// Replace the private key in place; the next SSH connection uses the new key.
    #[command(
        after_help = "Example:\n  berth credentials rotate ops --private-key-file ~/.ssh/id_ed25519_new"
    )]
    Rotate {
        credential: String,
        #[arg(long)]
        private_key_file: PathBuf,
    },
    /// Delete an SSH credential no server uses.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth credentials delete cred-abc"
    )]
    Delete { credential: String },
}
