//! `berth`: Berth's command-line client. It talks only to the REST API; the request bodies it
//! sends and the records it reads (progress events, access-failure evidence) are `berth-api`'s,
//! the shim's own definitions.

mod cli;
mod client;
mod commands;
mod config;
mod error;
mod output;
mod progress;
mod rows;
mod sse;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};
use commands::{
    Ctx, account, activity, backups, dependencies, deploy, deployments, infra, members, migrate,
    notify, observe, platform, previews, resource_config, resources, tasks, terminal, tokens,
    volumes, workspace,
};
use error::CliResult;
use output::Output;

fn main() -> ExitCode {
    stop_quietly_on_closed_pipe();
    // clap exits with 2 on usage errors and 0 for --help/--version.
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// Piped into `head` or `grep -q`, end as other Unix tools do when the reader goes away,
/// instead of panicking on the next write (Rust ignores SIGPIPE by default).
fn stop_quietly_on_closed_pipe() {
    // SAFETY: sets a signal's disposition to its default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn run(cli: Cli) -> CliResult<()> {
    let out = Output::new(cli.global.output, cli.global.quiet);
    // Not for `completion`, which needs neither the API nor the stored sign-in.
    let ctx = || Ctx::new(out, cli.global.url);
    match cli.command {
        Command::Completion { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "berth", &mut std::io::stdout());
            Ok(())
        }
        Command::Login(args) => account::login(&ctx()?, args),
        Command::Logout => account::logout(&ctx()?),
        Command::Context { organization } => account::context(&ctx()?, organization),
        Command::Bootstrap(command) => platform::bootstrap(&ctx()?, command),
        Command::Users(command) => platform::users(&ctx()?, command),
        Command::Account(command) => account::account(&ctx()?, command),
        Command::Organizations(command) => account::organizations(&ctx()?, command),
        Command::Members(command) => members::members(&ctx()?, command),
        Command::Invitations(command) => members::invitations(&ctx()?, command),
        Command::Projects(command) => workspace::projects(&ctx()?, command),
        Command::Environments(command) => workspace::environments(&ctx()?, command),
        Command::Servers(command) => infra::servers(&ctx()?, command),
        Command::Credentials(command) => infra::credentials(&ctx()?, command),
        Command::Resources(command) => resources::resources(&ctx()?, command),
        Command::Deployments(command) => deployments::deployments(&ctx()?, command),
        Command::Tokens(command) => tokens::tokens(&ctx()?, command),
        Command::Config(command) => resource_config::config(&ctx()?, command),
        Command::Volumes(command) => volumes::volumes(&ctx()?, command),
        Command::Db(command) => dependencies::db(&ctx()?, command),
        Command::Backups(command) => backups::backups(&ctx()?, command),
        Command::Tasks(command) => tasks::tasks(&ctx()?, command),
        Command::Previews(command) => previews::previews(&ctx()?, command),
        Command::Notify(command) => notify::notify(&ctx()?, command),
        Command::Migrate(command) => migrate::migrate(&ctx()?, command),
        Command::Monitoring(command) => platform::monitoring(&ctx()?, command),
        Command::Tls(command) => platform::tls(&ctx()?, command),
        Command::Decisions(command) => platform::decisions(&ctx()?, command),
        Command::Variables(command) => resources::variables(&ctx()?, command),
        Command::Secrets(command) => resources::secrets(&ctx()?, command),
        task @ (Command::Deploy { .. }
        | Command::Events { .. }
        | Command::Audit { .. }
        | Command::Terminal { .. }) => run_task(&ctx()?, task),
        observe @ (Command::Logs { .. }
        | Command::Health { .. }
        | Command::Diagnose { .. }
        | Command::Why { .. }
        | Command::Timeline { .. }) => run_observe(&ctx()?, observe),
    }
}

/// `deploy`, `events`, `audit` and `terminal`, whose options are gathered here.
fn run_task(ctx: &Ctx, command: Command) -> CliResult<()> {
    match command {
        Command::Deploy {
            resource,
            server,
            commit,
            git_ref,
            preview,
        } => {
            let revision = deploy::Revision { commit, git_ref };
            match preview {
                Some(preview) => deploy::deploy_preview(ctx, &resource, &preview, revision),
                None => deploy::deploy(ctx, &resource, server, revision),
            }
        }
        Command::Events {
            resource,
            kind,
            after,
            count,
            watch: _,
        } => activity::events(
            ctx,
            activity::EventsOptions {
                resource,
                kinds: kind,
                after,
                count,
            },
        ),
        Command::Audit {
            resource,
            object,
            limit,
            all,
        } => activity::audit(
            ctx,
            activity::AuditOptions {
                resource,
                object,
                limit,
                all,
            },
        ),
        Command::Terminal {
            server,
            resource,
            directory,
        } => terminal::terminal(ctx, server.as_deref(), resource.as_deref(), directory),
        _ => unreachable!("`run` passes the task verbs only"),
    }
}

/// A resource's logs, health, diagnosis and deployment timeline, and `why` a request failed.
fn run_observe(ctx: &Ctx, command: Command) -> CliResult<()> {
    match command {
        Command::Logs {
            resource,
            follow,
            tail,
        } => observe::logs(ctx, &resource, follow, tail),
        Command::Health {
            resource,
            live: _,
            history: true,
        } => observe::health_history(ctx, &resource),
        Command::Health {
            resource,
            live,
            history: false,
        } => observe::health(ctx, &resource, live),
        Command::Diagnose {
            resource,
            deployment,
        } => observe::diagnose(ctx, &resource, deployment),
        Command::Why { request_id } => observe::why(ctx, &request_id),
        Command::Timeline {
            resource,
            deployment,
            follow,
        } => observe::timeline(ctx, &resource, &deployment, follow),
        _ => unreachable!("`run` passes the observing commands only"),
    }
}

#[cfg(test)]
mod tests {
    /// The CLI reaches Berth through the REST API only: neither it nor the wire types it
    /// shares with the shim may pull in a Kubernetes client or the web server.
    #[test]
    fn no_kubernetes_or_web_server_crates() {
        let manifests = [
            include_str!("../Cargo.toml"),
            include_str!("../../api/Cargo.toml"),
            include_str!("../../migrate/Cargo.toml"),
        ];
        for manifest in manifests {
            let dependencies = manifest.split("[dependencies]").nth(1).unwrap_or_default();
            for name in [
                "kube",
                "k8s-openapi",
                "axum",
                "berth-crds",
                "berth-apiserver-shim",
            ] {
                let declared = dependencies
                    .lines()
                    .any(|line| line.split(['=', '.', ' ']).next() == Some(name));
                assert!(!declared, "{name} is a dependency:\n{manifest}");
            }
        }
    }
}
