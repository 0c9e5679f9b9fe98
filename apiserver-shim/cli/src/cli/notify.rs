//! `berth notify`: notification channels (where the organization hears of failed deployments,
//! unhealthy resources, failed scheduled tasks, unreachable servers…) and their deliveries.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Notify {
    /// List notification channels: kind, events, masked target, last delivery, readiness.
    #[command(
        visible_alias = "ls",
        after_help = "Examples:\n  berth notify channels\n  berth notify channels --project Shop"
    )]
    Channels {
        /// Only channels limited to this project (id, slug or name).
        #[arg(long)]
        project: Option<String>,
    },
    /// Show one notification channel.
    #[command(after_help = "Example:\n  berth notify show-channel ntf-abc")]
    ShowChannel {
        /// Channel id (ntf-…).
        channel: String,
    },
    /// Create a notification channel (admins and owners). A webhook's signing secret is
    /// printed once, now: receivers check `X-Berth-Signature-256: sha256=<hex HMAC-SHA256 of
    /// the body>` with it. The URL and SMTP password are kept in a Secret and never shown
    /// again.
    #[command(
        after_help = "Kinds: webhook (signed JSON POST), slack (Slack-compatible incoming webhook; Mattermost and Discord's /slack endpoints take it), email (SMTP, STARTTLS unless --no-start-tls).\n\nEvents (default: every failure and recovery; deployment-succeeded only when named): deployment-failed, deployment-succeeded, resource-unhealthy, resource-recovered, crash-loop, scheduled-task-failed, scheduled-task-missed, server-unreachable, threshold-crossed, certificate-expiring, certificate-failed, backup-failed, backup-late.\n\nExamples:\n  berth notify create-channel --name Ops --kind webhook --webhook-url https://hooks.example.com/berth\n  berth notify create-channel --name Chat --kind slack --webhook-url https://hooks.slack.com/services/T0/B0/x \\\n      --event deployment-failed --event resource-unhealthy --project Shop\n  echo \"$SMTP_PASSWORD\" | berth notify create-channel --name Mail --kind email \\\n      --to ops@example.com --from berth@example.com --smtp-host smtp.example.com \\\n      --smtp-username berth --smtp-password-stdin"
    )]
    CreateChannel(CreateChannelArgs),
    /// Send a test message to a channel (admins and owners). Prints the delivery's id; follow
    /// it with `berth notify deliveries --channel CHANNEL`.
    #[command(after_help = "Example:\n  berth notify test ntf-abc")]
    Test {
        /// Channel id (ntf-…).
        channel: String,
    },
    /// List deliveries, newest first: channel, event, subject, status, attempts, last error.
    #[command(
        after_help = "Examples:\n  berth notify deliveries\n  berth notify deliveries --channel ntf-abc --status failed"
    )]
    Deliveries {
        /// Only this channel's deliveries (ntf-…).
        #[arg(long)]
        channel: Option<String>,
        /// pending, delivered or failed.
        #[arg(long)]
        status: Option<String>,
        /// Only deliveries of this event.
        #[arg(long)]
        event: Option<String>,
    },
    /// Delete a channel (admins and owners), its Secret and its deliveries.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth notify delete-channel ntf-abc"
    )]
    DeleteChannel {
        /// Channel id (ntf-…).
        channel: String,
    },
}

// The channel `berth notify create-channel` adds: where it sends, and for which events. (Not a doc comment, which would become the subcommand's help.)
#[derive(clap::Args, Debug)]
pub struct CreateChannelArgs {
    /// Display name.
    #[arg(long)]
    pub name: String,
    /// webhook, slack or email.
    #[arg(long)]
    pub kind: String,
    /// The URL a webhook or slack channel posts to (`--url` is the API's own address).
    #[arg(long, value_name = "URL")]
    pub webhook_url: Option<String>,
    /// An event to deliver (repeatable); the default set when none is given.
    #[arg(long = "event", value_name = "EVENT")]
    pub events: Vec<String>,
    /// Only this project's events (id, slug or name).
    #[arg(long)]
    pub project: Option<String>,
    /// Email: a recipient (repeatable).
    #[arg(long = "to", value_name = "ADDRESS")]
    pub to: Vec<String>,
    /// Email: the sender address.
    #[arg(long, value_name = "ADDRESS")]
    pub from: Option<String>,
    /// Email: the SMTP server host.
    #[arg(long, value_name = "HOST")]
    pub smtp_host: Option<String>,
    /// Email: the SMTP port (default 587).
    #[arg(long, value_name = "PORT")]
    pub smtp_port: Option<i64>,
    /// Email: the SMTP login.
    #[arg(long, value_name = "USER")]
    pub smtp_username: Option<String>,
    /// Email: read the SMTP password from standard input (one line).
    #[arg(long)]
    pub smtp_password_stdin: bool,
    /// Email: a PEM file of the CA a private mail server's certificate is issued by.
    #[arg(long, value_name = "FILE")]
    pub smtp_ca_file: Option<std::path::PathBuf>,
    /// Email: send in plain text without STARTTLS (a relay on a trusted network only).
    #[arg(long)]
    pub no_start_tls: bool,
}
