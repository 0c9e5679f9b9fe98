//! `berth tasks`: scheduled tasks (a command a resource runs on a cron schedule in a fresh
//! container of its image) and their runs.

use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum Tasks {
    /// List scheduled tasks: resource, schedule, zone, status, next and latest run.
    #[command(
        visible_alias = "ls",
        after_help = "Examples:\n  berth tasks list\n  berth tasks list --resource web --status enabled"
    )]
    List {
        /// Only this resource's (id, slug or name).
        #[arg(short, long)]
        resource: Option<String>,
        /// Only this project's (id, slug or name).
        #[arg(long)]
        project: Option<String>,
        /// Only this environment's (id or name).
        #[arg(long)]
        environment: Option<String>,
        /// Only enabled or only disabled tasks.
        #[arg(long)]
        status: Option<String>,
    },
    /// Create a scheduled task. The command runs by `/bin/sh -c` in a fresh container of the
    /// resource's image with its configuration, on the resource's server. The schedule and
    /// zone are checked here before anything is sent.
    #[command(
        after_help = "Schedules: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly, read in --timezone (an IANA name, daylight-saving changes included).\n\nExamples:\n  berth tasks create --resource web --schedule '*/5 * * * *' --command 'php artisan schedule:run'\n  berth tasks create --resource web --schedule '0 3 * * *' --timezone Europe/Berlin \\\n      --command './bin/cleanup' --timeout 600 --retries 2 --run-missed"
    )]
    Create(CreateTaskArgs),
    /// Show a scheduled task: its schedule, next run and latest run.
    #[command(after_help = "Example:\n  berth tasks show tsk-abc")]
    Show {
        /// Task id (tsk-…).
        task: String,
    },
    /// Change a scheduled task: only the options given change.
    #[command(
        after_help = "Examples:\n  berth tasks configure tsk-abc --disable\n  berth tasks configure tsk-abc --schedule '@hourly' --timezone UTC"
    )]
    Configure(ConfigureTaskArgs),
    /// Run a task's command now, whatever its schedule (disabled tasks too). Prints the run's
    /// id; follow it with `berth tasks runs` and `berth tasks logs`.
    #[command(after_help = "Example:\n  berth tasks run tsk-abc")]
    Run {
        /// Task id (tsk-…).
        task: String,
    },
    /// List runs, newest first: trigger, status, exit code, times.
    #[command(
        after_help = "Examples:\n  berth tasks runs tsk-abc\n  berth tasks runs --resource web --status failed"
    )]
    Runs {
        /// Only this task's runs (tsk-…).
        task: Option<String>,
        /// Only runs of this resource's tasks (id, slug or name).
        #[arg(short, long)]
        resource: Option<String>,
        /// accepted, running, succeeded, failed, skipped or missed.
        #[arg(long)]
        status: Option<String>,
        /// manual or scheduled.
        #[arg(long)]
        trigger: Option<String>,
    },
    /// Print a run's output lines; stderr lines are marked `!`, Berth's own lines `#`.
    #[command(after_help = "Example:\n  berth tasks logs tsk-abc-m-k3x9")]
    Logs {
        /// Run id (from `berth tasks runs`).
        run: String,
    },
    /// Delete a scheduled task and its runs.
    #[command(
        visible_alias = "rm",
        after_help = "Example:\n  berth tasks delete tsk-abc"
    )]
    Delete {
        /// Task id (tsk-…).
        task: String,
    },
}

// What `berth tasks create` schedules. (Not a doc comment, which would become the subcommand's help.)
#[derive(clap::Args, Debug)]
pub struct CreateTaskArgs {
    /// Resource id, slug or name whose image and configuration the command runs with.
    #[arg(short, long)]
    pub resource: String,
    /// Five-field cron pattern or @hourly, @daily, @weekly, @monthly, @yearly.
    #[arg(long)]
    pub schedule: String,
    /// IANA time zone the schedule is read in.
    #[arg(long, default_value = "UTC")]
    pub timezone: String,
    /// The command (run by /bin/sh -c).
    #[arg(long)]
    pub command: String,
    /// Seconds a run may take before it is stopped and recorded failed (1-86400; default
    /// 3600).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<i64>,
    /// How often a failed run is tried again (0-10; default 0).
    #[arg(long)]
    pub retries: Option<i64>,
    /// forbid (default: a due run is skipped while one still runs), replace or allow.
    #[arg(long)]
    pub concurrency: Option<String>,
    /// Create it disabled: slots pass without a run (`berth tasks run` still runs it).
    #[arg(long)]
    pub disabled: bool,
    /// Run a slot missed while Berth was down once, late, when it is back.
    #[arg(long)]
    pub run_missed: bool,
}

// What `berth tasks configure` changes; an option left out is kept. (Not a doc comment, which would become the subcommand's help.)
#[derive(clap::Args, Debug)]
pub struct ConfigureTaskArgs {
    /// Task id (tsk-…).
    pub task: String,
    #[arg(long)]
    pub schedule: Option<String>,
    #[arg(long)]
    pub timezone: Option<String>,
    #[arg(long)]
    pub command: Option<String>,
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<i64>,
    #[arg(long)]
    pub retries: Option<i64>,
    /// forbid, replace or allow.
    #[arg(long)]
    pub concurrency: Option<String>,
    /// Stop starting runs on schedule.
    #[arg(long, conflicts_with = "enable")]
    pub disable: bool,
    /// Start runs on schedule again.
    #[arg(long)]
    pub enable: bool,
    /// true or false: run a missed slot once, late.
    #[arg(long, value_name = "BOOL")]
    pub run_missed: Option<bool>,
}
