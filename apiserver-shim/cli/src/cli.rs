//! The command line: nouns with list/show/create/delete, and the task verbs.

use clap::{Args, Parser, Subcommand};
use clap_complete::Shell;

use crate::error::EXIT_CODES_HELP;
use crate::output::Format;

mod backups;
mod dependencies;
mod infra;
mod migrate;
mod notify;
mod platform;
mod previews;
mod resources;
mod tasks;
mod volumes;
mod workspace;
pub use backups::{AddTargetArgs, Backups, PolicyRulesArgs};
pub use dependencies::{Db, ImportArgs, ProvisionArgs};
pub use infra::*;
pub use migrate::{Migrate, Platform};
pub use notify::{CreateChannelArgs, Notify};
pub use platform::{Bootstrap, Decisions, Monitoring, QueryOptions, ResourceConfig, Tls, Users};
pub use previews::Previews;
pub use resources::*;
pub use tasks::{ConfigureTaskArgs, CreateTaskArgs, Tasks};
pub use volumes::{BackupVolumeArgs, CreateVolumeArgs, Volumes};
pub use workspace::*;

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
    /// Databases and caches (dependency resources): managed PostgreSQL and Redis, and the
    /// resources bound to them.
    #[command(
        subcommand,
        visible_alias = "dependencies",
        after_help = "Example:\n  berth db create orders-db --project Shop --environment prod --server edge"
    )]
    Db(Db),
    /// Backups of managed PostgreSQL databases: taken and proven by a test restore, restored
    /// in place or into a clone; the targets they are stored at.
    #[command(
        subcommand,
        visible_alias = "backup",
        after_help = "Example:\n  berth backups create orders-db && berth backups list orders-db"
    )]
    Backups(Backups),
    /// Scheduled tasks: a command a resource runs on a cron schedule in a time zone, in a
    /// fresh container of its image; their runs and output.
    #[command(
        subcommand,
        visible_alias = "task",
        after_help = "Example:\n  berth tasks create --resource web --schedule '*/5 * * * *' --command 'echo hi'"
    )]
    Tasks(Tasks),
    /// Pull requests' preview environments: list them, show one, remove one.
    #[command(
        subcommand,
        visible_alias = "preview",
        after_help = "Examples:\n  berth previews list --resource web\n  berth previews show web-pr-7\n  berth previews delete web-pr-7"
    )]
    Previews(Previews),
    /// Notification channels (signed webhook, Slack-compatible webhook, email) that hear of
    /// failures and recoveries, and the deliveries sent to them.
    #[command(
        subcommand,
        visible_alias = "notifications",
        after_help = "Example:\n  berth notify create-channel --name Ops --kind webhook --webhook-url https://hooks.example.com/berth\n  berth notify test ntf-abc"
    )]
    Notify(Notify),
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
        after_help = "Examples:\n  berth deploy web\n  berth deploy web --commit \"$GITHUB_SHA\"   # from CI, with a deploy token\n  berth deploy web --preview pr-7 --commit \"$GITHUB_SHA\"   # to pull request 7's preview\n\nExits 0 when the deployment succeeded, 1 when it failed (its error code and message are shown).\nWith --preview it does not wait: it prints the attempt's id; `berth previews show <resource>-pr-<n>` tells how it stands."
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
        /// A git source's branch, tag or ref to deploy instead of the one it follows (with
        /// --preview: the pull request's head branch).
        #[arg(long = "ref")]
        git_ref: Option<String>,
        /// Deploy the commit to this pull request's preview environment (`pr-<number>`)
        /// instead, creating it or moving it to the commit; needs --commit.
        #[arg(
            long,
            value_name = "pr-NUMBER",
            requires = "commit",
            conflicts_with = "server"
        )]
        preview: Option<String>,
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
        /// Accepted for symmetry with `deployments list --watch`: events always follow.
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
