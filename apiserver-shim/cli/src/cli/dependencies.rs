//! `berth db`: managed databases and caches (dependency resources) and the resources bound to
//! them.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Db {
    /// List dependency resources: kind, server, lifecycle and the masked connection.
    #[command(
        visible_alias = "ls",
        after_help = "Examples:\n  berth db list\n  berth db list --project Shop --environment prod --kind postgres"
    )]
    List {
        /// Only this project's (id, slug or name).
        #[arg(long)]
        project: Option<String>,
        /// Only this environment's (id or name).
        #[arg(long)]
        environment: Option<String>,
        /// Only postgres or only redis.
        #[arg(long)]
        kind: Option<String>,
    },
    /// Show a dependency resource: lifecycle, masked connection, the resources bound to it.
    #[command(after_help = "Example:\n  berth db show orders-db")]
    Show {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
    },
    /// Provision a managed PostgreSQL or Redis on a server of an environment. Berth runs it
    /// as a container on a private network, keeps its data in a Docker volume and its
    /// generated password in a Secret (never shown).
    #[command(
        after_help = "Examples:\n  berth db create orders-db --project Shop --environment prod --server srv-abc\n  berth db create cache --kind redis --project Shop --environment prod --server edge"
    )]
    Create(ProvisionArgs),
    /// Import an external PostgreSQL or Redis by its connection URL: Berth keeps the URL in a
    /// Secret (shown masked), checks from the server that the database answers, and binds it
    /// like a managed one. Pass the URL on standard input, so it stays out of your shell's
    /// history and the process list.
    #[command(
        after_help = "Examples:\n  printf '%s' \"$DATABASE_URL\" | berth db import orders --project Shop --environment prod --server edge --connection-url-stdin\n  berth db import cache --kind redis --project Shop --environment prod --server edge --connection-url redis://:pw@10.0.0.5:6379/0"
    )]
    Import(ImportArgs),
    /// Print the certificate of the authority a managed PostgreSQL's TLS certificate is issued
    /// by, to verify it from a client outside Berth (`sslmode=verify-full sslrootcert=FILE`).
    #[command(after_help = "Example:\n  berth db ca-certificate orders-db > orders-ca.crt")]
    CaCertificate {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
    },
    /// Delete a dependency resource no resource binds (unbind it first). Its container and
    /// network go; its data volume is kept unless --delete-data repeats its name. One a backup
    /// policy covers is backed up once more first (and kept if that backup fails), unless
    /// --skip-final-backup repeats its name.
    #[command(
        visible_alias = "rm",
        after_help = "Examples:\n  berth db delete orders-db\n  berth db delete dep-abc --delete-data \"Orders DB\"   # the data goes too\n  berth db delete dep-abc --skip-final-backup \"Orders DB\"   # no last backup"
    )]
    Delete {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
        /// Type the dependency's name to remove its data volume too (cannot be undone).
        #[arg(long, value_name = "NAME")]
        delete_data: Option<String>,
        /// Type the dependency's name to delete it without the final backup its backup
        /// policy would take first.
        #[arg(long, value_name = "NAME")]
        skip_final_backup: Option<String>,
    },
    /// Open the database's own client, logged in: `psql` for a PostgreSQL, `redis-cli` for a
    /// Redis (its password stays in the container). Organization administrators only.
    #[command(after_help = "Example:\n  berth db connect orders-db")]
    Connect {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
    },
    /// Bind a dependency to a resource of the same environment: its connection URL becomes
    /// the variable --as at the resource's next deployment.
    #[command(after_help = "Example:\n  berth db bind orders-db --resource web --as DATABASE_URL")]
    Bind {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
        /// Resource id or slug.
        #[arg(short, long)]
        resource: String,
        /// Environment variable that receives the URL (default DATABASE_URL for postgres,
        /// REDIS_URL for redis).
        #[arg(long = "as", value_name = "VARIABLE")]
        target_name: Option<String>,
    },
    /// Remove a binding (the dependency and its data are kept).
    #[command(after_help = "Example:\n  berth db unbind --resource web DATABASE_URL")]
    Unbind {
        /// Resource id or slug.
        #[arg(short, long)]
        resource: String,
        /// The binding: its variable name.
        binding: String,
    },
    /// Rotate a managed PostgreSQL's login: a new one beside the old, the bound apps that
    /// auto-deploy redeployed on it with no downtime, then the old one revoked. `berth db show`
    /// follows it.
    #[command(after_help = "Example:\n  berth db rotate orders-db")]
    Rotate {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
    },
    /// Publish a managed dependency's port on its server's host for the listed source
    /// addresses only: the server's firewall drops every other source. `berth db show` says
    /// once the port is published.
    #[command(
        after_help = "Example:\n  berth db expose orders-db --port 15432 --allow-from 203.0.113.7/32 --allow-from 198.51.100.0/24"
    )]
    Expose {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
        /// Port on the server's host.
        #[arg(long)]
        port: i64,
        /// A source address (CIDR) allowed to connect; repeat for more. At least one.
        #[arg(long = "allow-from", required = true)]
        allow_from: Vec<String>,
    },
    /// Upgrade a managed PostgreSQL to an image of a newer major version: every database and
    /// login dumped (the old server read-only meanwhile: writes wait), restored into a new
    /// server on a new volume, counted on both, then switched to. The old volume is kept.
    /// `berth db show` follows it.
    #[command(after_help = "Example:\n  berth db upgrade orders-db --image postgres:17")]
    Upgrade {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
        /// The new image; its tag names the major version.
        #[arg(long)]
        image: String,
    },
    /// Close a managed dependency's host port again (bound apps keep reaching it privately).
    #[command(after_help = "Example:\n  berth db unexpose orders-db")]
    Unexpose {
        /// Dependency id (dep-…), slug or name.
        dependency: String,
    },
    /// List a resource's bindings.
    #[command(after_help = "Example:\n  berth db bindings --resource web")]
    Bindings {
        /// Resource id or slug.
        #[arg(short, long)]
        resource: String,
    },
}

// What `berth db create` provisions, and where. (Not a doc comment, which would become the subcommand's help.)
#[derive(clap::Args, Debug)]
pub struct ProvisionArgs {
    /// Display name; its slug must be free in the environment.
    pub name: String,
    /// postgres (default) or redis.
    #[arg(long, default_value = "postgres")]
    pub kind: String,
    /// Project id, slug or name.
    #[arg(long)]
    pub project: String,
    /// Environment id or name (of that project).
    #[arg(long)]
    pub environment: String,
    /// Server id or name it runs on.
    #[arg(long)]
    pub server: String,
    /// Image instead of the official postgres:16 / redis:7.
    #[arg(long)]
    pub image: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
}

// The database `berth db import` registers, and where it belongs. (Not a doc comment, which would become the subcommand's help.)
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// Display name; its slug must be free in the environment.
    pub name: String,
    /// postgres (default) or redis.
    #[arg(long, default_value = "postgres")]
    pub kind: String,
    /// Project id, slug or name.
    #[arg(long)]
    pub project: String,
    /// Environment id or name (of that project).
    #[arg(long)]
    pub environment: String,
    /// Server id or name the database is checked from.
    #[arg(long)]
    pub server: String,
    /// Read the connection URL from standard input (its first line).
    #[arg(
        long,
        conflicts_with = "connection_url",
        required_unless_present = "connection_url"
    )]
    pub connection_url_stdin: bool,
    /// The connection URL (prefer --connection-url-stdin: an argument is visible to others).
    #[arg(long)]
    pub connection_url: Option<String>,
    /// Image whose client checks it, instead of the official postgres:16 / redis:7.
    #[arg(long)]
    pub image: Option<String>,
    #[arg(long)]
    pub description: Option<String>,
}
