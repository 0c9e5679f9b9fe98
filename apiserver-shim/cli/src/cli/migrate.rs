//! `berth migrate`: from Railway, Heroku or a Compose file to Berth — plan offline, apply with
//! the plan's digest confirmed, resume, read back, verify and undo.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// Where the files come from.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// `railway environment config --json` output, railway.json/.toml, or Appaloft's export.
    Railway,
    /// app.json, Procfile, `heroku config --shell|--json`, `heroku domains --json`.
    Heroku,
    /// A compose.yaml / docker-compose.yml (and the env files it names).
    Compose,
    /// A neutral MigrationBundle (appaloft.io/migration/v1) as JSON or YAML.
    Bundle,
}

/// The task file every command after `plan` reads (and apply, resume and cleanup update).
#[derive(Args, Debug)]
pub struct TaskFile {
    /// The task file `berth migrate plan` wrote: the plan and the receipts so far.
    #[arg(default_value = "migration-task.json")]
    pub task: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum Migrate {
    /// Translate a platform's export files and plan the migration; changes nothing. Writes
    /// the task file and prints the steps, blockers, warnings, every variable and the digest
    /// to confirm.
    #[command(after_help = "Examples:
  berth migrate plan --from compose compose.yaml --server srv-abc
  berth migrate plan --from heroku app.json Procfile config.txt domains.json --server srv-abc
  berth migrate plan --from railway environment-config.json web.railway.json --server srv-abc --task-file shop.json")]
    Plan {
        /// The platform the files come from.
        #[arg(long, value_enum)]
        from: Platform,
        /// The export files (recognised by their content, whatever their names).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The server the resources deploy to (its id).
        #[arg(long)]
        server: Option<String>,
        /// Name of the project to create (or reuse, if one of that name exists).
        #[arg(long)]
        project: Option<String>,
        /// Name of the environment (default: production).
        #[arg(long)]
        environment: Option<String>,
        /// Where to write the task file.
        #[arg(long, short = 't', default_value = "migration-task.json")]
        task_file: PathBuf,
    },
    /// Apply a planned migration; --confirm repeats the plan's digest. Values of env://NAME
    /// secret references are read from this shell's environment and sent with this request
    /// only.
    #[command(
        after_help = "Example:\n  DATABASE_URL=postgres://… berth migrate apply migration-task.json --confirm sha256:…"
    )]
    Apply {
        #[command(flatten)]
        task: TaskFile,
        /// The plan's digest (`planDigest`), as `berth migrate plan` printed it.
        #[arg(long)]
        confirm: String,
    },
    /// Continue an apply that stopped (a failed step fixed, a lost connection).
    #[command(after_help = "Example:\n  berth migrate resume migration-task.json")]
    Resume {
        #[command(flatten)]
        task: TaskFile,
    },
    /// Which steps are done and what each created object looks like now.
    #[command(after_help = "Example:\n  berth migrate status migration-task.json")]
    Status {
        #[command(flatten)]
        task: TaskFile,
    },
    /// Check the migrated apps: live health, deployments, domains and variables. Exits 1
    /// unless the verdict is passed.
    #[command(after_help = "Example:\n  berth migrate verify migration-task.json")]
    Verify {
        #[command(flatten)]
        task: TaskFile,
    },
    /// Undo what the migration created, newest first (owner); --confirm repeats the digest.
    /// A database resource or a volume is only removed with --confirm-data-loss.
    #[command(
        after_help = "Example:\n  berth migrate cleanup migration-task.json --confirm sha256:… --confirm-data-loss"
    )]
    Cleanup {
        #[command(flatten)]
        task: TaskFile,
        /// The plan's digest again.
        #[arg(long)]
        confirm: String,
        /// Also remove database resources and storage volumes the migration created.
        #[arg(long)]
        confirm_data_loss: bool,
    },
}
