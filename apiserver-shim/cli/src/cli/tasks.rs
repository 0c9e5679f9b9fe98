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
    Create {
        /// Resource id, slug or name whose image and configuration the command runs with.
        #[arg(short, long)]
        resource: String,
        /// Five-field cron pattern or @hourly, @daily, @weekly, @monthly, @yearly.
        #[arg(long)]
        schedule: String,
        /// IANA time zone the schedule is read in.
        #[arg(long, default_value = "UTC")]
        timezone: String,
        /// The command (run by /bin/sh -c).
        #[arg(long)]
        command: String,
        /// Seconds a run may take before it is stopped and recorded failed (1-86400; default
        /// 3600).
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<i64>,
        /// How often a failed run is tried again (0-10; default 0).
        #[arg(long)]
        retries: Option<i64>,
        /// forbid (default: a due run is skipped while one still runs), replace or allow.
        #[arg(long)]
        concurrency: Option<String>,
        /// Create it disabled: slots pass without a run (`berth tasks run` still runs it).
        #[arg(long)]
        disabled: bool,
        /// Run a slot missed while Berth was down once, late, when it is back.
        #[arg(long)]
        run_missed: bool,
    },
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
    Configure {
        /// Task id (tsk-…).
        task: String,
        #[arg(long)]
        schedule: Option<String>,
        #[arg(long)]
        timezone: Option<String>,
        #[arg(long)]
        command: Option<String>,
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<i64>,
        #[arg(long)]
        retries: Option<i64>,
        /// forbid, replace or allow.
        #[arg(long)]
        concurrency: Option<String>,
        /// Stop starting runs on schedule.
        #[arg(long, conflicts_with = "enable")]
        disable: bool,
        /// Start runs on schedule again.
        #[arg(long)]
        enable: bool,
        /// true or false: run a missed slot once, late.
        #[arg(long, value_name = "BOOL")]
        run_missed: Option<bool>,
    },
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
