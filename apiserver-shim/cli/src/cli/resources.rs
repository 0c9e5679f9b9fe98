//! Resources, deploy tokens, variables and secrets.

use std::path::PathBuf;

use clap::{Args, Subcommand};

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
    /// Create a resource; with --server and a source it deploys at once (unless --no-deploy).
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
        /// Do not deploy yet: the first deployment waits for `berth deploy` (set variables and
        /// secrets first).
        #[arg(long)]
        no_deploy: bool,
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
