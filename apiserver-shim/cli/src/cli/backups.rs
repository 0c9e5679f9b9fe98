//! `berth backups`: backups of managed PostgreSQL and Redis databases, their restores and the targets
//! they are stored at.

use clap::{Args, Subcommand};

#[derive(Subcommand, Debug)]
pub enum Backups {
    /// List a database's backups, newest first: status, tables and rows its test restore
    /// counted, size, target.
    #[command(
        visible_alias = "ls",
        after_help = "Examples:\n  berth backups list orders-db\n  berth backups list orders-db --status failed"
    )]
    List {
        /// Dependency id (dep-…), slug or name.
        database: String,
        /// Only pending, ready or failed ones.
        #[arg(long)]
        status: Option<String>,
    },
    /// Back up a ready managed PostgreSQL or Redis now: dumped in its container, sealed to the target
    /// and proven by a test restore before it is ready (`berth backups show` follows it).
    #[command(
        after_help = "Examples:\n  berth backups create orders-db\n  berth backups create orders-db --target bkt-abc --description 'before the migration'"
    )]
    Create {
        /// Dependency id (dep-…), slug or name.
        database: String,
        /// Backup target id; the organization's only one when left out.
        #[arg(long)]
        target: Option<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// Upload a dump made outside Berth (`pg_dump -Fc`) as a backup of a ready managed
    /// PostgreSQL: stored sealed at the target and proven by a test restore like any backup
    /// (`berth backups show` follows it); the database is untouched until `berth backups
    /// restore`.
    #[command(
        after_help = "Examples:\n  pg_dump -Fc -d shop > shop.dump\n  berth backups upload orders-db shop.dump\n  berth backups restore dep-abc-up-xyz --yes"
    )]
    Upload {
        /// Dependency id (dep-…), slug or name.
        database: String,
        /// The `pg_dump -Fc` archive.
        file: std::path::PathBuf,
        /// Backup target id; the organization's only one when left out.
        #[arg(long)]
        target: Option<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// Show a backup: status, step, artifact, test restore and its latest restore.
    #[command(after_help = "Example:\n  berth backups show dep-abc-bk-xyz")]
    Show {
        /// Backup id.
        backup: String,
    },
    /// Restore a ready backup into its own database (in place) or another of its kind in the
    /// same project and environment (--into). The data there is replaced (a PostgreSQL's in one
    /// transaction, a Redis's keyspace at once); the bound apps are not restarted. --yes
    /// acknowledges both.
    #[command(
        after_help = "Examples:\n  berth backups restore dep-abc-bk-xyz --yes\n  berth backups restore dep-abc-bk-xyz --into orders-copy --yes"
    )]
    Restore {
        /// Backup id.
        backup: String,
        /// Another database to restore into (a clone); the backup's own when left out.
        #[arg(long)]
        into: Option<String>,
        /// Acknowledge that the target's data is replaced and its apps are not restarted.
        #[arg(long)]
        yes: bool,
    },
    /// List the organization's backup targets and whether each could be written.
    #[command(after_help = "Example:\n  berth backups targets")]
    Targets,
    /// Add a backup target (administrators): a directory on a registered server, or a bucket
    /// of an S3-compatible store (the bucket must exist; its secret key is read from standard
    /// input and kept in a Secret of the organization, never shown again).
    #[command(
        after_help = "Examples:\n  berth backups add-target Offsite --server store --path /srv/berth-backups\n  printf '%s' \"$AWS_SECRET_ACCESS_KEY\" | berth backups add-target Bucket \\\n      --s3-endpoint https://s3.eu-west-1.amazonaws.com --s3-bucket acme-backups --s3-region eu-west-1 \\\n      --s3-access-key-id AKIA... --s3-secret-access-key-stdin\n  (self-hosted stores such as Garage or MinIO usually need --s3-path-style)"
    )]
    AddTarget(AddTargetArgs),
    /// Set a database's backup policy (created on first use, then changed in the options
    /// given): backups on a schedule, each proven by a test restore, kept by rules (no rule:
    /// the newest 7), the rest pruned at the target. A slot missed while Berth was down is
    /// backed up once, late, and told (backup-late).
    #[command(
        after_help = "Examples:\n  berth backups policy orders-db --every-hours 6 --keep-last 8\n  berth backups policy orders-db --schedule '30 2 * * *' --timezone Europe/Berlin --keep-daily 7 --keep-weekly 4\n  berth backups policy orders-db --disable"
    )]
    Policy {
        /// Dependency id (dep-…), slug or name.
        database: String,
        #[command(flatten)]
        rules: PolicyRulesArgs,
    },
    /// List backup policies: schedule, next run, backups kept and the newest proven restore
    /// point.
    #[command(
        after_help = "Examples:\n  berth backups policies\n  berth backups policies --database orders-db"
    )]
    Policies {
        /// Only this database's (id, slug or name).
        #[arg(long)]
        database: Option<String>,
    },
}

/// When a backup policy backs up and what it keeps: the options of `berth backups policy` and
/// `berth volumes policy`.
#[derive(Args, Debug)]
pub struct PolicyRulesArgs {
    /// Back up every this many hours (1 to 8760), counted from midnight UTC.
    #[arg(long, conflicts_with = "schedule")]
    pub every_hours: Option<i64>,
    /// Five-field cron pattern or @hourly, @daily, @weekly, @monthly, @yearly.
    #[arg(long)]
    pub schedule: Option<String>,
    /// IANA time zone the schedule is read in (default UTC).
    #[arg(long, requires = "schedule")]
    pub timezone: Option<String>,
    /// Keep the newest this many.
    #[arg(long)]
    pub keep_last: Option<i64>,
    /// Keep every backup younger than this many days.
    #[arg(long)]
    pub keep_days: Option<i64>,
    /// Keep the newest of each of the last this many days.
    #[arg(long)]
    pub keep_daily: Option<i64>,
    /// Keep the newest of each of the last this many ISO weeks.
    #[arg(long)]
    pub keep_weekly: Option<i64>,
    /// Backup target id; the organization's only one when left out.
    #[arg(long)]
    pub target: Option<String>,
    /// Stop taking backups at slots (the ones kept stay).
    #[arg(long, conflicts_with = "enable")]
    pub disable: bool,
    /// Take backups at slots again.
    #[arg(long)]
    pub enable: bool,
}

impl PolicyRulesArgs {
    /// What `--disable`/`--enable` ask for; `None` when neither is given.
    pub fn enabled(&self) -> Option<bool> {
        (self.disable || self.enable).then_some(self.enable)
    }
}

// Where `berth backups add-target` keeps artifacts: a server directory or an S3 bucket. (Not a doc comment, which would become the subcommand's help.)
#[derive(Args, Debug)]
pub struct AddTargetArgs {
    /// A name for people.
    pub name: String,
    /// Server id or name (a server directory).
    #[arg(
        long,
        required_unless_present = "s3_endpoint",
        conflicts_with = "s3_endpoint"
    )]
    pub server: Option<String>,
    /// Absolute directory on the server.
    #[arg(long, requires = "server")]
    pub path: Option<String>,
    /// The S3 store's URL, without a path (a bucket).
    #[arg(long, requires_all = ["s3_bucket", "s3_access_key_id", "s3_secret_access_key_stdin"])]
    pub s3_endpoint: Option<String>,
    /// The bucket.
    #[arg(long, requires = "s3_endpoint")]
    pub s3_bucket: Option<String>,
    /// The region requests are signed for.
    #[arg(long, requires = "s3_endpoint", default_value = "us-east-1")]
    pub s3_region: String,
    /// Address the bucket in the URL's path rather than its host name.
    #[arg(long, requires = "s3_endpoint")]
    pub s3_path_style: bool,
    /// A key prefix for Berth's artifacts.
    #[arg(long, requires = "s3_endpoint")]
    pub s3_prefix: Option<String>,
    /// The access key id.
    #[arg(long, requires = "s3_endpoint")]
    pub s3_access_key_id: Option<String>,
    /// Read the secret access key from standard input.
    #[arg(long, requires = "s3_endpoint")]
    pub s3_secret_access_key_stdin: bool,
}
