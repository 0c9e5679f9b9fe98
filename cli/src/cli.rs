//! The command line: nouns with list/show/create/delete, and the task verbs.

use std::path::PathBuf;

use berth_api::members::OrganizationRole;
use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;

use crate::error::EXIT_CODES_HELP;
use crate::output::Format;

mod migrate;
mod platform;
mod volumes;
pub use migrate::{Migrate, Platform};
pub use platform::{Bootstrap, Decisions, Monitoring, QueryOptions, ResourceConfig, Tls, Users};
pub use volumes::Volumes;

#[derive(Parser, Debug)]
#[command(
    name = "berth",
    // Fixed, so help reads the same when installed as the kubectl plugin `kubectl-berth`.
    bin_name = "berth",
    version,
    about = "Berth from a terminal: every REST API task, with live deployment progress",
    after_help = top_help()
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

fn top_help() -> String {
    format!(
        "Examples:
  berth login --url http://127.0.0.1:7070/api --email you@example.com
  berth projects create Shop
  berth deploy web
  berth resources list -o json

Environment: BERTH_URL (the API's base URL, ending in /api) and BERTH_TOKEN (a deploy token or
session token) override the stored sign-in; NO_COLOR turns colour off. Installed as
`kubectl-berth`, it runs as `kubectl berth`.

{EXIT_CODES_HELP}"
    )
}

#[derive(Args, Debug)]
pub struct Global {
    /// The REST API's base URL, ending in /api (default: the one stored by `berth login`).
    #[arg(long, global = true, env = "BERTH_URL")]
    pub url: Option<String>,
    /// Output format: aligned table, or the API's own JSON or YAML.
    #[arg(short, long, global = true, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Print ids only (lists and creations).
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Sign in with email and password (prompted), or store a deploy token.
    #[command(
        after_help = "Examples:\n  berth login --url http://127.0.0.1:7070/api --email you@example.com\n  echo \"$PASSWORD\" | berth login --email you@example.com --password-stdin\n  berth login --token \"$DEPLOY_TOKEN\""
    )]
    Login(Login),
    /// Sign out: revoke the session and forget the stored token.
    #[command(after_help = "Example:\n  berth logout")]
    Logout,
    /// Show your organizations and the current one, or switch to ORG (id or slug).
    #[command(after_help = "Examples:\n  berth context\n  berth context acme")]
    Context {
        /// Organization id or slug to act in from now on.
        organization: Option<String>,
    },
    /// First run: whether an administrator exists, and creating the first one.
    #[command(subcommand, after_help = "Example:\n  berth bootstrap status")]
    Bootstrap(Bootstrap),
    /// User accounts (administrators create them).
    #[command(
        subcommand,
        visible_alias = "user",
        after_help = "Example:\n  berth users create ana@example.com"
    )]
    Users(Users),
    /// Your account: profile and signed-in sessions.
    #[command(subcommand, after_help = "Example:\n  berth account sessions")]
    Account(Account),
    /// Organizations you belong to.
    #[command(
        subcommand,
        visible_alias = "orgs",
        after_help = "Example:\n  berth orgs list"
    )]
    Organizations(Organizations),
    /// Members of the current organization.
    #[command(
        subcommand,
        visible_alias = "member",
        after_help = "Example:\n  berth members list"
    )]
    Members(Members),
    /// Invitations to the current organization.
    #[command(
        subcommand,
        visible_alias = "invitation",
        after_help = "Example:\n  berth invitations create ana@example.com --role member"
    )]
    Invitations(Invitations),
    /// Projects of the current organization.
    #[command(
        subcommand,
        visible_alias = "project",
        after_help = "Example:\n  berth projects create Shop"
    )]
    Projects(Projects),
    /// Environments of a project.
    #[command(
        subcommand,
        visible_alias = "envs",
        after_help = "Example:\n  berth environments create --project prj-abc prod --kind production"
    )]
    Environments(Environments),
    /// Servers that run deployments (reached over SSH).
    #[command(
        subcommand,
        visible_alias = "server",
        after_help = "Example:\n  berth servers list"
    )]
    Servers(Servers),
    /// SSH credentials servers use.
    #[command(
        subcommand,
        visible_alias = "creds",
        after_help = "Example:\n  berth credentials create --name ops --private-key-file ~/.ssh/id_ed25519"
    )]
    Credentials(Credentials),
    /// Resources: applications, services, databases, static sites.
    #[command(
        subcommand,
        visible_alias = "res",
        after_help = "Example:\n  berth resources list --project prj-abc"
    )]
    Resources(Resources),
    /// Deploy tokens (their secret is shown once, on creation and rotation).
    #[command(
        subcommand,
        visible_alias = "token",
        after_help = "Example:\n  berth tokens create --name ci --project prj-abc"
    )]
    Tokens(Tokens),
    /// Storage volumes: named Docker volumes or server directories resources mount.
    #[command(
        subcommand,
        visible_alias = "volume",
        after_help = "Example:\n  berth volumes create uploads --project Shop --environment prod"
    )]
    Volumes(Volumes),
    /// Move apps from Railway, Heroku or a Compose file to Berth: plan, apply, verify, undo.
    #[command(
        subcommand,
        visible_alias = "migration",
        after_help = "Example:\n  berth migrate plan --from compose compose.yaml --server srv-abc"
    )]
    Migrate(Migrate),
    /// A resource's profiles (network, access, runtime), source, auto-deploy and storage.
    #[command(
        subcommand,
        after_help = "Example:\n  berth config network --resource web --port 8080"
    )]
    Config(ResourceConfig),
    /// Monitoring samples, their rollup, and threshold policies.
    #[command(
        subcommand,
        visible_alias = "mon",
        after_help = "Example:\n  berth monitoring samples --query scope.kind=server --query scope.serverId=srv-abc"
    )]
    Monitoring(Monitoring),
    /// Custom domains and their TLS certificates.
    #[command(
        subcommand,
        after_help = "Example:\n  berth tls certificates\n  berth tls issue dom-shop --reason renew"
    )]
    Tls(Tls),
    /// Capability, entitlement, overlay, route-surface and usage-intent records.
    #[command(
        subcommand,
        after_help = "Example:\n  berth decisions capabilities deployments.create"
    )]
    Decisions(Decisions),
    /// A resource's variables (`env import FILE` loads a .env file).
    #[command(
        subcommand,
        visible_alias = "env",
        after_help = "Examples:\n  berth env import .env --resource web\n  berth env set --resource web LOG_LEVEL=debug"
    )]
    Variables(Variables),
    /// A resource's secrets (values are never shown).
    #[command(
        subcommand,
        visible_alias = "secret",
        after_help = "Example:\n  printf %s \"$KEY\" | berth secrets set --resource web API_KEY"
    )]
    Secrets(Secrets),
    /// Deployment attempts: list, show, follow, cancel, retry, roll back.
    #[command(
        subcommand,
        visible_alias = "deps",
        after_help = "Examples:\n  berth deployments list --resource web\n  berth deployments follow dep-web-3\n  berth deployments rollback dep-web-5 --follow"
    )]
    Deployments(Deployments),
    /// Deploy a resource now and follow its progress to the URL that serves it.
    #[command(
        after_help = "Examples:\n  berth deploy web\n  berth deploy web --commit \"$GITHUB_SHA\"   # from CI, with a deploy token\n\nExits 0 when the deployment succeeded, 1 when it failed (its error code and message are shown)."
    )]
    Deploy {
        /// Resource id or slug.
        resource: String,
        /// The server to deploy to (default: the resource's).
        #[arg(long)]
        server: Option<String>,
        /// A git source's commit to deploy (40 hex digits) instead of its ref's newest.
        #[arg(long)]
        commit: Option<String>,
        /// A git source's branch, tag or ref to deploy instead of the one it follows.
        #[arg(long = "ref")]
        git_ref: Option<String>,
    },
    /// A resource's runtime logs.
    #[command(after_help = "Examples:\n  berth logs web --tail 50\n  berth logs web -f")]
    Logs {
        /// Resource id or slug.
        resource: String,
        /// Keep printing new lines until the container stops.
        #[arg(short, long)]
        follow: bool,
        /// How many of the latest lines to show.
        #[arg(long, default_value_t = 100)]
        tail: u32,
    },
    /// A resource's health (cached, or asked of the server now with --live).
    #[command(after_help = "Examples:\n  berth health web --live\n  berth health web --history")]
    Health {
        /// Resource id or slug.
        resource: String,
        /// Ask the server now (Docker inspect, a request through the edge proxy).
        #[arg(long, conflicts_with = "history")]
        live: bool,
        /// How it has been: the recorded observations of the last 24 hours, oldest first.
        #[arg(long)]
        history: bool,
    },
    /// Everything about a resource for a support ticket, as Markdown ready to paste.
    #[command(after_help = "Example:\n  berth diagnose web > ticket.md")]
    Diagnose {
        /// Resource id or slug.
        resource: String,
        /// The deployment in focus (default: the latest).
        #[arg(long)]
        deployment: Option<String>,
    },
    /// Follow changes of your organization's resources, deployments, servers and domain
    /// bindings as they happen (the change feed; no polling). One line per change: when, kind,
    /// id, created/updated/deleted, status, summary; `-o json` prints each event's JSON. A
    /// broken connection resumes after the last change seen; Ctrl-C stops.
    #[command(
        visible_alias = "watch",
        after_help = "Examples:\n  berth events\n  berth events --resource web --kind deployment\n  berth events --after 1764181234567-42   # resume after an event id\n  berth events --count 1 -o json          # wait for the next change, print it, exit"
    )]
    Events {
        /// Only this resource (id or slug), its deployments and its domain bindings.
        #[arg(long)]
        resource: Option<String>,
        /// Only these kinds: resource, deployment, server, domain-binding (repeat or
        /// comma-separate).
        #[arg(long, value_delimiter = ',')]
        kind: Vec<String>,
        /// Resume after this event id (an `eventId` printed with -o json); changes no longer
        /// kept are announced with a note to re-read.
        #[arg(long)]
        after: Option<String>,
        /// Exit after this many changes.
        #[arg(long)]
        count: Option<u64>,
        /// Accepted for symmetry with other `--watch` commands: events always follow.
        #[arg(short, long, hide = true)]
        watch: bool,
    },
    /// Who changed what, newest first: REST writes (actor, operation, changed fields) and the
    /// objects' Kubernetes Events (berth-controller's reconciles).
    #[command(
        after_help = "Examples:\n  berth audit --resource web          # e.g. who turned off auto-deploy?\n  berth audit --object srv-1 --limit 10\n  berth audit --all -o json"
    )]
    Audit {
        /// Only this resource (id or slug) and its objects.
        #[arg(long)]
        resource: Option<String>,
        /// Only this object (any kind's id).
        #[arg(long)]
        object: Option<String>,
        /// Events per page (1-100, default 50).
        #[arg(long)]
        limit: Option<u32>,
        /// Every page, not only the first.
        #[arg(long)]
        all: bool,
    },
    /// Why a request failed: the edge proxy's evidence for an X-Request-Id.
    #[command(after_help = "Example:\n  berth why 3f0c5e1e-0d7e-4d59-9a43-2b1d6f0b9c11")]
    Why {
        /// The X-Request-Id the edge proxy answered with.
        request_id: String,
    },
    /// The stored timeline of one deployment: its steps and build output.
    #[command(
        after_help = "Examples:\n  berth timeline web dep-web-3\n  berth timeline web dep-web-3 --follow"
    )]
    Timeline {
        /// Resource id or slug.
        resource: String,
        /// Deployment id.
        deployment: String,
        /// Keep printing new entries until the attempt has succeeded or failed.
        #[arg(short, long)]
        follow: bool,
    },
    /// An interactive shell on a server, or in a resource's serving container
    /// (administrators), until the shell exits.
    #[command(
        after_help = "Example:\n  berth terminal edge --directory /srv\n  berth terminal --resource web\n\nRaw mode while it runs (Ctrl-C goes to the remote shell); exit the shell to leave."
    )]
    Terminal {
        /// Server id or name.
        #[arg(required_unless_present = "resource")]
        server: Option<String>,
        /// A shell in this resource's serving container instead (id or slug).
        #[arg(long, short, conflicts_with_all = ["server", "directory"])]
        resource: Option<String>,
        /// Start in this directory, relative to the login directory.
        #[arg(long)]
        directory: Option<String>,
    },
    /// Print a shell completion script.
    #[command(after_help = "Example:\n  berth completion bash > /etc/bash_completion.d/berth")]
    Completion { shell: Shell },
}

/// A role as the API spells it (`owner`, `admin`, `member`).
fn organization_role(text: &str) -> Result<OrganizationRole, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| "expected owner, admin or member".to_string())
}

#[derive(Args, Debug)]
pub struct Login {
    /// Email to sign in with (the password is prompted without echo).
    #[arg(long, conflicts_with = "token")]
    pub email: Option<String>,
    /// Read the password from the first line of standard input.
    #[arg(long, requires = "email")]
    pub password_stdin: bool,
    /// Store this deploy token instead of signing in with a password.
    #[arg(long)]
    pub token: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Account {
    /// Show your profile.
    #[command(after_help = "Example:\n  berth account show")]
    Show,
    /// List your signed-in sessions (this CLI's is marked current).
    #[command(after_help = "Example:\n  berth account sessions")]
    Sessions,
    /// Sign one of your sessions out.
    #[command(after_help = "Example:\n  berth account revoke-session sess-abc")]
    RevokeSession { session: String },
    /// Change your display name or avatar (an empty value clears it).
    #[command(after_help = "Example:\n  berth account update --display-name \"Ana Lima\"")]
    Update {
        #[arg(long)]
        display_name: Option<String>,
        #[arg(long)]
        avatar_url: Option<String>,
    },
    /// Delete your account (asks for no confirmation: the API checks your user id).
    #[command(after_help = "Example:\n  berth account delete")]
    Delete,
}

#[derive(Subcommand, Debug)]
pub enum Organizations {
    /// List your organizations.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth orgs list")]
    List,
    /// Show an organization's profile.
    #[command(after_help = "Example:\n  berth orgs show acme")]
    Show { organization: String },
    /// Create an organization you own.
    #[command(after_help = "Example:\n  berth orgs create \"Acme Inc\" --slug acme")]
    Create {
        name: String,
        #[arg(long)]
        slug: Option<String>,
    },
    /// Change an organization's name or logo.
    #[command(after_help = "Example:\n  berth orgs update acme --name \"Acme GmbH\"")]
    Update {
        organization: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        logo_url: Option<String>,
    },
    /// Delete an organization and everything in it.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth orgs delete acme"
    )]
    Delete { organization: String },
}

#[derive(Subcommand, Debug)]
pub enum Members {
    /// List the organization's members.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth members list")]
    List,
    /// Change a member's role (member id or email).
    #[command(after_help = "Example:\n  berth members role ana@example.com admin")]
    Role {
        member: String,
        /// owner, admin or member.
        #[arg(value_parser = organization_role)]
        role: OrganizationRole,
    },
    /// Remove a member (reversible with `reactivate`).
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth members remove ana@example.com"
    )]
    Remove { member: String },
    /// Reactivate a removed member.
    #[command(after_help = "Example:\n  berth members reactivate mem-abc")]
    Reactivate { member: String },
    /// Hand your ownership to another member (you become admin).
    #[command(after_help = "Example:\n  berth members transfer-ownership ana@example.com")]
    TransferOwnership { member: String },
}

#[derive(Subcommand, Debug)]
pub enum Invitations {
    /// List the organization's invitations.
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth invitations list"
    )]
    List,
    /// Invite someone by email.
    #[command(after_help = "Example:\n  berth invitations create ana@example.com --role admin")]
    Create {
        email: String,
        /// owner, admin or member.
        #[arg(long, default_value = "member", value_parser = organization_role)]
        role: OrganizationRole,
    },
    /// Revoke a pending invitation.
    #[command(after_help = "Example:\n  berth invitations revoke inv-abc")]
    Revoke { invitation: String },
    /// Accept an invitation sent to your email.
    #[command(after_help = "Example:\n  berth invitations accept inv-abc")]
    Accept { invitation: String },
}

#[derive(Subcommand, Debug)]
pub enum Projects {
    /// List projects.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth projects list")]
    List,
    /// Count active projects.
    #[command(after_help = "Example:\n  berth projects count")]
    Count,
    /// Show a project.
    #[command(after_help = "Example:\n  berth projects show prj-abc")]
    Show { project: String },
    /// Create a project.
    #[command(after_help = "Example:\n  berth projects create Shop --description storefront")]
    Create {
        name: String,
        #[arg(long)]
        description: Option<String>,
    },
    /// Rename a project (and, with --slug, change its slug).
    #[command(
        after_help = "Example:\n  berth projects rename prj-abc \"Web Shop\" --slug web-shop"
    )]
    Rename {
        project: String,
        name: String,
        #[arg(long)]
        slug: Option<String>,
    },
    /// Restore an archived project (admins).
    #[command(after_help = "Example:\n  berth projects restore prj-abc")]
    Restore { project: String },
    /// Archive a project (its history stays readable).
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth projects delete prj-abc"
    )]
    Delete { project: String },
}

#[derive(Subcommand, Debug)]
pub enum Environments {
    /// List environments.
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth environments list --project prj-abc"
    )]
    List {
        #[arg(long)]
        project: Option<String>,
    },
    /// Count active environments.
    #[command(after_help = "Example:\n  berth environments count")]
    Count,
    /// Show an environment (variables masked).
    #[command(after_help = "Example:\n  berth environments show env-abc")]
    Show { environment: String },
    /// Create an environment in a project.
    #[command(
        after_help = "Example:\n  berth environments create --project prj-abc prod --kind production"
    )]
    Create {
        #[arg(long)]
        project: String,
        name: String,
        /// local, development, test, staging, production, preview or custom.
        #[arg(long, default_value = "development")]
        kind: String,
    },
    /// Archive an environment (its history stays readable).
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth environments delete env-abc"
    )]
    Delete {
        environment: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Rename an environment.
    #[command(after_help = "Example:\n  berth environments rename env-abc staging-eu")]
    Rename { environment: String, name: String },
    /// Lock an environment (admins): no deployments or changes until unlocked.
    #[command(
        after_help = "Example:\n  berth environments lock env-abc --reason \"release freeze\""
    )]
    Lock {
        environment: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Unlock an environment (admins).
    #[command(after_help = "Example:\n  berth environments unlock env-abc")]
    Unlock { environment: String },
    /// Set a plain variable every resource of the environment inherits.
    #[command(
        after_help = "Example:\n  berth environments set env-abc LOG_LEVEL=debug --build-time"
    )]
    Set {
        environment: String,
        /// KEY=VALUE.
        assignment: String,
        #[arg(long)]
        build_time: bool,
    },
    /// Remove an environment variable.
    #[command(after_help = "Example:\n  berth environments unset env-abc LOG_LEVEL")]
    Unset {
        environment: String,
        key: String,
        #[arg(long)]
        build_time: bool,
    },
    /// A new environment of the same project with a copy of this one's variables.
    #[command(after_help = "Example:\n  berth environments clone env-abc staging-2 --kind staging")]
    Clone {
        environment: String,
        name: String,
        #[arg(long)]
        kind: Option<String>,
    },
    /// How two environments' variables differ (secret-looking values masked).
    #[command(after_help = "Example:\n  berth environments diff staging production")]
    Diff { environment: String, other: String },
    /// Copy an environment's variables into another (shows the diff first).
    #[command(after_help = "Example:\n  berth environments promote staging production")]
    Promote { environment: String, target: String },
}

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

#[derive(Subcommand, Debug)]
pub enum Resources {
    /// List resources.
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth resources list --environment env-abc -o json"
    )]
    List {
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        environment: Option<String>,
    },
    /// Show a resource (id or slug); `-o json` prints the whole record.
    #[command(after_help = "Example:\n  berth resources show web")]
    Show { resource: String },
    /// Deploy the resource's current source again (or that of --from).
    #[command(
        after_help = "Examples:\n  berth resources redeploy web --follow\n  berth resources redeploy web --from dep-web-2"
    )]
    Redeploy {
        resource: String,
        /// An earlier attempt whose source (and commit) to deploy.
        #[arg(long)]
        from: Option<String>,
        #[arg(short, long)]
        follow: bool,
    },
    /// Archive a resource: no deployments or changes until restored (it keeps serving).
    #[command(after_help = "Example:\n  berth resources archive web --reason \"replaced by web2\"")]
    Archive {
        resource: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Restore an archived resource.
    #[command(after_help = "Example:\n  berth resources restore web")]
    Restore { resource: String },
    /// Create a resource; with --server and a source it deploys at once.
    #[command(
        after_help = "Example:\n  berth resources create web --project prj-abc --environment env-abc \\\n    --server srv-abc --image nginx:1.27 --port 80"
    )]
    Create {
        name: String,
        #[arg(long)]
        project: String,
        #[arg(long)]
        environment: String,
        /// application, service, database, cache, compose-stack, worker, static-site, external.
        #[arg(long, default_value = "application")]
        kind: String,
        #[arg(long)]
        slug: Option<String>,
        #[arg(long)]
        server: Option<String>,
        /// Deploy this Docker image.
        #[arg(long, conflicts_with = "folder")]
        image: Option<String>,
        /// Build the Dockerfile of this folder (a path the controller can read).
        #[arg(long)]
        folder: Option<String>,
        /// The port the application listens on.
        #[arg(long)]
        port: Option<u16>,
    },
    /// Stop the resource's runtime (its image, configuration and route stay).
    #[command(after_help = "Example:\n  berth resources stop web")]
    Stop { resource: String },
    /// Start a stopped runtime again.
    #[command(after_help = "Example:\n  berth resources start web")]
    Start { resource: String },
    /// Restart the runtime once.
    #[command(after_help = "Example:\n  berth resources restart web")]
    Restart { resource: String },
    /// Delete a resource: its containers, route and deployments.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth resources delete web"
    )]
    Delete { resource: String },
}

#[derive(Subcommand, Debug)]
pub enum Tokens {
    /// List deploy tokens.
    #[command(visible_alias = "ls", after_help = "Example:\n  berth tokens list")]
    List,
    /// Show a deploy token (never its secret).
    #[command(after_help = "Example:\n  berth tokens show dtk-abc")]
    Show { token: String },
    /// Create a deploy token; its secret is printed once.
    #[command(after_help = "Example:\n  berth tokens create --name ci --project prj-abc")]
    Create {
        #[arg(long)]
        name: String,
        /// Limit to these projects (repeatable).
        #[arg(long = "project")]
        projects: Vec<String>,
        /// Limit to these environments (repeatable).
        #[arg(long = "environment")]
        environments: Vec<String>,
        /// Limit to these resources (repeatable).
        #[arg(long = "resource")]
        resources: Vec<String>,
        /// RFC 3339 expiry, e.g. 2027-01-01T00:00:00Z.
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// Issue a new secret (printed once); the old one is refused at once.
    #[command(after_help = "Example:\n  berth tokens rotate dtk-abc")]
    Rotate { token: String },
    /// Revoke a deploy token.
    #[command(after_help = "Example:\n  berth tokens revoke dtk-abc")]
    Revoke { token: String },
}

#[derive(Args, Debug)]
pub struct ResourceOption {
    /// Resource id or slug.
    #[arg(short, long)]
    pub resource: String,
}

#[derive(Args, Debug)]
pub struct ExposureOption {
    /// runtime (the container's environment) or build-time (Docker build args).
    #[arg(long, default_value = "runtime")]
    pub exposure: String,
}

#[derive(Subcommand, Debug)]
pub enum Variables {
    /// The resource's effective configuration (secrets masked), with each entry's scope.
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth env list --resource web"
    )]
    List {
        #[command(flatten)]
        resource: ResourceOption,
    },
    /// Set variables: KEY=VALUE, one or more.
    #[command(after_help = "Example:\n  berth env set --resource web LOG_LEVEL=debug WORKERS=4")]
    Set {
        #[command(flatten)]
        resource: ResourceOption,
        #[command(flatten)]
        exposure: ExposureOption,
        #[arg(required = true)]
        assignments: Vec<String>,
    },
    /// Delete a variable.
    #[command(
        visible_alias = "unset",
        after_help = "Example:\n  berth env delete --resource web LOG_LEVEL"
    )]
    Delete {
        #[command(flatten)]
        resource: ResourceOption,
        #[command(flatten)]
        exposure: ExposureOption,
        key: String,
    },
    /// Import a .env file: all entries or none (use - for standard input).
    #[command(after_help = "Example:\n  berth env import .env --resource web")]
    Import {
        file: PathBuf,
        #[command(flatten)]
        resource: ResourceOption,
        #[command(flatten)]
        exposure: ExposureOption,
    },
}

#[derive(Subcommand, Debug)]
pub enum Secrets {
    /// List the resource's secrets (values masked).
    #[command(
        visible_alias = "ls",
        after_help = "Example:\n  berth secrets list --resource web"
    )]
    List {
        #[command(flatten)]
        resource: ResourceOption,
        #[command(flatten)]
        exposure: ExposureOption,
    },
    /// Show one secret (its value masked).
    #[command(after_help = "Example:\n  berth secrets show --resource web API_KEY")]
    Show {
        #[command(flatten)]
        resource: ResourceOption,
        #[command(flatten)]
        exposure: ExposureOption,
        key: String,
    },
    /// Create or rotate a secret; the value is read from standard input.
    #[command(
        after_help = "Example:\n  printf %s \"$KEY\" | berth secrets set --resource web API_KEY"
    )]
    Set {
        #[command(flatten)]
        resource: ResourceOption,
        #[command(flatten)]
        exposure: ExposureOption,
        key: String,
    },
    /// Delete a secret.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth secrets delete --resource web API_KEY"
    )]
    Delete {
        #[command(flatten)]
        resource: ResourceOption,
        #[command(flatten)]
        exposure: ExposureOption,
        key: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_command_has_an_example() {
        fn walk(command: &clap::Command, path: &str) {
            for sub in command.get_subcommands() {
                let path = format!("{path} {}", sub.get_name());
                if sub.get_name() == "help" {
                    continue;
                }
                let help = sub
                    .get_after_help()
                    .map(|h| h.to_string())
                    .unwrap_or_default();
                assert!(help.contains("berth "), "{path} has no example");
                walk(sub, &path);
            }
        }
        walk(&Cli::command(), "berth");
    }

    #[test]
    fn help_documents_the_exit_codes() {
        let help = Cli::command().render_long_help().to_string();
        for line in EXIT_CODES_HELP.lines() {
            assert!(help.contains(line), "{line} missing from --help");
        }
    }
}
