//! The command line of the endpoints beyond the everyday nouns: first-run bootstrap, user
//! accounts, a resource's profiles, storage and auto-deploy, monitoring and thresholds, and the
//! decision records (capabilities, entitlements, overlays, route surfaces, usage intents).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::ResourceOption;

#[derive(Subcommand, Debug)]
pub enum Bootstrap {
    /// Whether a first administrator and organization exist.
    #[command(after_help = "Example:\n  berth bootstrap status")]
    Status,
    /// Create the first administrator and organization (once); a generated password is shown
    /// once.
    #[command(
        after_help = "Example:\n  berth bootstrap first-admin --email admin@example.com --organization Acme"
    )]
    FirstAdmin {
        #[arg(long)]
        email: String,
        #[arg(long)]
        display_name: Option<String>,
        /// Display name of the first organization (default `Default`).
        #[arg(long)]
        organization: Option<String>,
        /// Read the password from standard input instead of having one generated.
        #[arg(long)]
        password_stdin: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum Users {
    /// Create a user account (administrators); a generated password is shown once.
    #[command(after_help = "Example:\n  berth users create ana@example.com --display-name Ana")]
    Create {
        email: String,
        #[arg(long)]
        display_name: Option<String>,
        /// Read the password from standard input instead of having one generated.
        #[arg(long)]
        password_stdin: bool,
    },
}

/// A resource's network, access and runtime profiles, storage, source and auto-deploy.
#[derive(Subcommand, Debug)]
pub enum ResourceConfig {
    /// Set where the application listens and how it is exposed.
    #[command(after_help = "Example:\n  berth config network --resource web --port 8080")]
    Network {
        #[command(flatten)]
        resource: ResourceOption,
        /// The port the application listens on.
        #[arg(long)]
        port: i64,
        /// http (default) or tcp.
        #[arg(long)]
        protocol: Option<String>,
        /// reverse-proxy (default), direct-port or none.
        #[arg(long)]
        exposure: Option<String>,
        /// Host port of direct-port exposure.
        #[arg(long)]
        host_port: Option<i64>,
    },
    /// Set the generated access route: on or off, and its path prefix.
    #[command(after_help = "Example:\n  berth config access --resource web --path-prefix /shop")]
    Access {
        #[command(flatten)]
        resource: ResourceOption,
        /// inherit (default) or disabled.
        #[arg(long)]
        generated_access: Option<String>,
        #[arg(long)]
        path_prefix: Option<String>,
    },
    /// Set how the resource is built, started and health-checked.
    #[command(
        after_help = "Examples:\n  berth config runtime --resource web --health-path /healthz --restart-policy always\n  berth config runtime --resource api --base-image node:22-alpine --install-command 'npm ci' \\\n    --build-command 'npm run build' --start-command 'node dist/server.js'"
    )]
    Runtime {
        #[command(flatten)]
        resource: ResourceOption,
        /// auto (default), dockerfile, docker-compose, prebuilt-image, workspace-commands or
        /// static.
        #[arg(long)]
        strategy: Option<String>,
        /// Run by /bin/sh -c in place of the image's command.
        #[arg(long)]
        start_command: Option<String>,
        /// Run in the build on --base-image (workspace-commands, static).
        #[arg(long)]
        install_command: Option<String>,
        /// Run in the build after the install command (workspace-commands, static).
        #[arg(long)]
        build_command: Option<String>,
        /// The image the install, build and start commands run on.
        #[arg(long)]
        base_image: Option<String>,
        /// The directory a static site serves, relative to the base directory.
        #[arg(long)]
        publish_directory: Option<String>,
        /// The Dockerfile to build, relative to the base directory.
        #[arg(long)]
        dockerfile: Option<String>,
        /// The stage of a multi-stage Dockerfile to build.
        #[arg(long)]
        build_target: Option<String>,
        /// The HTTP path a new container must answer before it takes traffic.
        #[arg(long, conflicts_with = "health_command")]
        health_path: Option<String>,
        /// A command run in a new container (by /bin/sh -c) that must exit 0 before it takes
        /// over: the check of a worker that listens on no port.
        #[arg(long)]
        health_command: Option<String>,
        /// unless-stopped (default), always, on-failure or never.
        #[arg(long)]
        restart_policy: Option<String>,
    },
    /// Bind the resource to a new source (deployed by the next `berth deploy`).
    #[command(
        after_help = "Examples:\n  berth config source --resource web --image nginx:1.27\n  berth config source --resource web --folder /srv/app\n  berth config source --resource web --git https://github.com/acme/shop.git --ref main\n  berth config source --resource web --git git@github.com:acme/shop.git --deploy-key shop-deploy"
    )]
    Source {
        #[command(flatten)]
        resource: ResourceOption,
        /// A prebuilt image.
        #[arg(long, conflicts_with_all = ["folder", "git"], required_unless_present_any = ["folder", "git"])]
        image: Option<String>,
        /// A folder on the controller's filesystem.
        #[arg(long, conflicts_with = "git")]
        folder: Option<String>,
        /// A git repository: an https://, ssh://, git@host:path or git:// URL, or a path on
        /// the controller.
        #[arg(long)]
        git: Option<String>,
        /// The branch, tag or ref to follow (the repository's default branch when omitted).
        #[arg(long = "ref", requires = "git")]
        git_ref: Option<String>,
        /// A commit to deploy (40 hex digits) instead of the ref's newest.
        #[arg(long, requires = "git")]
        commit: Option<String>,
        /// The directory inside the source to build from.
        #[arg(long)]
        base_directory: Option<String>,
        /// The SSH credential whose key (a deploy key) reads a private repository over SSH.
        #[arg(long, requires = "git")]
        deploy_key: Option<String>,
        /// The git host's SSH key fingerprint (SHA256:…), pinned on first fetch when omitted.
        #[arg(long, requires = "deploy_key")]
        host_key: Option<String>,
    },
    /// Show auto-deploy, or turn it on or off.
    #[command(
        after_help = "Examples:\n  berth config auto-deploy --resource web\n  berth config auto-deploy --resource web enable --ref refs/heads/main\n\nFor a git source, the first enable prints the webhook secret once: give it to the git host's\npush webhook, delivered to $BERTH_URL/webhooks/github (or gitlab, gitea)."
    )]
    AutoDeploy {
        #[command(flatten)]
        resource: ResourceOption,
        /// enable or disable; shows the policy when omitted.
        #[arg(value_parser = ["enable", "disable"])]
        mode: Option<String>,
        /// Source refs that trigger a deployment, e.g. refs/heads/main (repeatable; `*`
        /// matches any run of characters).
        #[arg(long = "ref")]
        refs: Vec<String>,
        /// Event kinds that trigger a deployment: push, tag (repeatable; default push).
        #[arg(long = "event")]
        events: Vec<String>,
        /// Replace the binding's webhook secret (shown once); the old one stops verifying.
        #[arg(long)]
        rotate_webhook_secret: bool,
    },
    /// Attach a storage volume of the resource's environment at a path in the container
    /// (create one with `berth volumes create`).
    #[command(
        after_help = "Example:\n  berth config attach-storage --resource web uploads /var/lib/app"
    )]
    AttachStorage {
        #[command(flatten)]
        resource: ResourceOption,
        /// Storage volume id, slug or name.
        volume: String,
        /// Absolute path inside the container.
        path: String,
    },
    /// Detach a storage volume (the volume is kept).
    #[command(after_help = "Example:\n  berth config detach-storage --resource web att-abc")]
    DetachStorage {
        #[command(flatten)]
        resource: ResourceOption,
        attachment: String,
    },
}

/// `KEY=VALUE` query parameters, passed to the API as they are.
#[derive(Args, Debug)]
pub struct QueryOptions {
    /// A query parameter of the endpoint, e.g. `--query window.from=2026-11-01T00:00:00Z`
    /// (repeatable).
    #[arg(long = "query", value_name = "KEY=VALUE")]
    pub query: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum Monitoring {
    /// The latest monitoring samples (host totals per server, usage per container), each
    /// figure as `group.field=value` of the spec's resourceMetrics.
    #[command(
        after_help = "Example:\n  berth monitoring samples --query scope.kind=server --query scope.serverId=srv-abc"
    )]
    Samples {
        #[command(flatten)]
        query: QueryOptions,
    },
    /// Samples summed up per bucket: one line per signal and bucket, with its averages.
    #[command(
        after_help = "Example:\n  berth monitoring rollup --query scope.kind=server --query scope.serverId=srv-abc"
    )]
    Rollup {
        #[command(flatten)]
        query: QueryOptions,
    },
    /// A scope's threshold policy and its latest evaluation.
    #[command(
        after_help = "Example:\n  berth monitoring thresholds --query scope.kind=server --query scope.serverId=srv-abc"
    )]
    Thresholds {
        #[command(flatten)]
        query: QueryOptions,
    },
    /// Create or replace a scope's threshold policy from a JSON file (the API's body).
    #[command(
        after_help = "Example:\n  berth monitoring set-thresholds thresholds.json\n\nThe file holds {\"scope\": {\"kind\": \"server\", \"serverId\": …}, \"rules\": […]}."
    )]
    SetThresholds {
        /// The body as JSON; - for standard input.
        file: PathBuf,
    },
    /// Delete a threshold policy: its scope is no longer evaluated.
    #[command(
        after_help = "Example:\n  berth monitoring delete-thresholds server-srv-abc\n\nThe policy id is the policyId `berth monitoring thresholds` shows."
    )]
    DeleteThresholds {
        /// The policy's id (policyId).
        policy: String,
    },
    /// Live usage snapshots: totals by project, environment, resource and deployment, and the
    /// containers, images and volumes behind them (one JSON line per snapshot).
    #[command(
        after_help = "Example:\n  berth monitoring usage --count 1 --query scope.projectId=prj-abc"
    )]
    Usage {
        /// Stop after this many snapshots (default: until interrupted).
        #[arg(long)]
        count: Option<u64>,
        #[command(flatten)]
        query: QueryOptions,
    },
    /// Retention policies: the system defaults and the organization's own, or one category's.
    #[command(
        after_help = "Example:\n  berth monitoring retention\n  berth monitoring retention process-attempts --query scope=organization"
    )]
    Retention {
        /// One category, e.g. runtime-monitoring-samples.
        category: Option<String>,
        #[command(flatten)]
        query: QueryOptions,
    },
    /// Create or change the organization's retention policy of a category (configuration
    /// only: berth-controller runs it on a schedule).
    #[command(
        after_help = "Example:\n  berth monitoring set-retention runtime-monitoring-samples 3 --dry-run true"
    )]
    SetRetention {
        category: String,
        /// Days history is kept (1..36500).
        days: i64,
        /// `organization` (default) or `system` (the first administrator only).
        #[arg(long)]
        scope: Option<String>,
        /// Count what a run would delete.
        #[arg(long)]
        dry_run: Option<bool>,
        /// Delete what is older than the retention.
        #[arg(long)]
        destructive: Option<bool>,
        /// Whether the policy is in effect.
        #[arg(long)]
        enabled: Option<bool>,
    },
}

#[derive(Subcommand, Debug)]
pub enum Tls {
    /// Certificates (never their keys), or one with its expiry and conditions.
    #[command(after_help = "Example:\n  berth tls certificates\n  berth tls certificates dom-shop")]
    Certificates { id: Option<String> },
    /// Domain bindings, or one with its verification, route and served certificate.
    #[command(after_help = "Example:\n  berth tls domains\n  berth tls domains dom-shop")]
    Domains { id: Option<String> },
    /// Ask for a certificate for a domain binding now (answers the attempt's id).
    #[command(
        after_help = "Example:\n  berth tls issue dom-shop --reason renew --idempotency-key renew-1"
    )]
    Issue {
        /// The domain binding's id.
        binding: String,
        /// `issue` (default), `renew` or `replace`.
        #[arg(long, value_parser = ["issue", "renew", "replace"])]
        reason: Option<String>,
        /// Asking again with the same key starts no second attempt.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Bind a host name (and path prefix) to a resource; the controller routes it, checks
    /// its DNS and, under `--tls auto`, gets its certificate.
    #[command(
        after_help = "Example:\n  berth tls bind shop.example.com --resource web\n  berth tls bind api.example.com --resource api --path /v1 --tls disabled"
    )]
    Bind {
        /// Host name, e.g. shop.example.com or *.example.com.
        domain: String,
        /// Resource id or slug.
        #[arg(short, long)]
        resource: String,
        /// Path prefix served under the host name.
        #[arg(long, default_value = "/")]
        path: String,
        /// `auto` (an ACME certificate) or `disabled` (plain HTTP).
        #[arg(long, value_parser = ["auto", "disabled"], default_value = "auto")]
        tls: String,
        /// Binding again with the same key creates no second binding.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Where a host name resolves, against the resource's server, and the A record to create:
    /// before binding (`--resource`) or for a binding's id.
    #[command(
        after_help = "Example:\n  berth tls dns-check shop.example.com --resource web\n  berth tls dns-check dom-shop"
    )]
    DnsCheck {
        /// Host name (with `--resource`), else a domain binding's id.
        domain: String,
        /// Resource id or slug the host name would be bound to.
        #[arg(short, long)]
        resource: Option<String>,
        /// Path prefix (for the conflict check).
        #[arg(long)]
        path: Option<String>,
    },
    /// What unbinding would leave behind (certificates that stop being renewed).
    #[command(after_help = "Example:\n  berth tls delete-check dom-shop")]
    DeleteCheck { binding: String },
    /// Unbind a host name (its route goes; the resource keeps serving its other names).
    #[command(
        visible_alias = "unbind",
        after_help = "Example:\n  berth tls delete dom-shop"
    )]
    Delete { binding: String },
}

/// Decision and usage records (self-hosted Berth allows and entitles everything).
#[derive(Subcommand, Debug)]
pub enum Decisions {
    /// Whether operations are allowed.
    #[command(after_help = "Example:\n  berth decisions capabilities deployments.create")]
    Capabilities {
        #[arg(required = true)]
        operations: Vec<String>,
    },
    /// Whether capabilities are entitled.
    #[command(after_help = "Example:\n  berth decisions entitlements custom-domains")]
    Entitlements {
        #[arg(required = true)]
        capabilities: Vec<String>,
    },
    /// List deployment-overlay decision records.
    #[command(after_help = "Example:\n  berth decisions overlays")]
    Overlays {
        #[command(flatten)]
        query: QueryOptions,
    },
    /// List route-surface decision records.
    #[command(after_help = "Example:\n  berth decisions route-surfaces")]
    RouteSurfaces {
        #[command(flatten)]
        query: QueryOptions,
    },
    /// List usage-intent records.
    #[command(after_help = "Example:\n  berth decisions usage-intents")]
    UsageIntents {
        #[command(flatten)]
        query: QueryOptions,
    },
    /// Decide on a deployment overlay, a route surface, or record a usage intent, from a JSON
    /// file (the API's body).
    #[command(
        after_help = "Example:\n  berth decisions record usage-intent intent.json\n\nKinds: overlay, route-surface, usage-intent."
    )]
    Record {
        #[arg(value_parser = ["overlay", "route-surface", "usage-intent"])]
        kind: String,
        /// The body as JSON; - for standard input.
        file: PathBuf,
    },
}
