//! The check of an imported database from its server: the kind's own client, in a throwaway
//! container of the dependency's image on the server's host network (it reaches what the
//! server reaches), logs in with the URL and asks one question — `psql … select 1` or
//! `redis-cli … PING`. The URL goes in as an environment variable, never on a command line,
//! and whatever the client prints is masked before it is shown.

use std::collections::HashMap;
use std::time::Duration;

use berth_crds::dependency_resource::DependencyKind;
use berth_crds::masking::Masker;
use berth_crds::{MANAGED_LABEL, NAMESPACE_LABEL};
use berth_remote::RemoteError;
use berth_remote::docker::{docker_call, is_conflict};
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::CreateContainerOptionsBuilder;

use super::plan::DEPENDENCY_LABEL;
use crate::reconcilers::deployment::server_target::Target;
use crate::reconcilers::scheduled_task::container::{Waited, output, wait};

/// How long the client may take to connect and answer.
const CHECK_TIMEOUT: Duration = Duration::from_secs(20);
/// The environment variable that hands the client the URL.
const URL_VARIABLE: &str = "BERTH_CHECK_URL";

/// One check of an imported database.
pub struct Check<'a> {
    pub kind: DependencyKind,
    /// The image whose client runs the check.
    pub image: &'a str,
    /// The throwaway container's name.
    pub container: String,
    pub namespace: &'a str,
    pub dependency: &'a str,
    pub url: &'a str,
}

/// The client's command: it prints `answer` when the database let it in and answered.
fn client(kind: DependencyKind) -> (&'static str, &'static str) {
    match kind {
        DependencyKind::Postgres => (
            "PGCONNECT_TIMEOUT=10 psql \"$BERTH_CHECK_URL\" -Atqc 'select 1'",
            "1",
        ),
        DependencyKind::Redis => (
            "redis-cli -u \"$BERTH_CHECK_URL\" --no-auth-warning PING",
            "PONG",
        ),
    }
}

/// Runs the check: `Ok(None)` when the database answered, `Ok(Some(why))` when it did not
/// (the client's last words, masked), `Err` when the server could not run it.
pub async fn run(target: &Target, check: &Check<'_>) -> Result<Option<String>, RemoteError> {
    let (script, answer) = client(check.kind);
    create(target, check, script).await?;
    let outcome = run_created(target, check, answer).await;
    // Gone however it ended, so its environment (the URL) does not stay on the server.
    target.remove_container(&check.container).await?;
    outcome
}

async fn run_created(
    target: &Target,
    check: &Check<'_>,
    answer: &str,
) -> Result<Option<String>, RemoteError> {
    target.start(&check.container).await?;
    let waited = wait(target, &check.container, CHECK_TIMEOUT).await?;
    let masker = Masker::new([check.url]);
    let printed: Vec<String> = output(target, &check.container, &masker)
        .await?
        .into_iter()
        .map(|line| line.text)
        .filter(|text| !text.trim().is_empty())
        .collect();
    Ok(verdict(check.kind, waited, answer, &printed))
}

/// What the client's end says about the database.
fn verdict(
    kind: DependencyKind,
    waited: Waited,
    answer: &str,
    printed: &[String],
) -> Option<String> {
    let last = printed.last().map(|line| line.trim().to_string());
    let client = match kind {
        DependencyKind::Postgres => "psql",
        DependencyKind::Redis => "redis-cli",
    };
    match waited {
        Waited::Exited(0) if last.as_deref() == Some(answer) => None,
        Waited::StillRunning => Some(format!(
            "{client} got no answer within {}s",
            CHECK_TIMEOUT.as_secs()
        )),
        Waited::Gone => Some(format!("the {client} check's container went away")),
        Waited::Exited(code) => Some(match last {
            Some(said) => format!("{client} failed (exit code {code}): {said}"),
            None => format!("{client} failed (exit code {code})"),
        }),
    }
}

async fn create(target: &Target, check: &Check<'_>, script: &str) -> Result<(), RemoteError> {
    let body = ContainerCreateBody {
        image: Some(check.image.to_string()),
        env: Some(vec![format!("{URL_VARIABLE}={}", check.url)]),
        entrypoint: Some(vec!["sh".to_string(), "-c".to_string()]),
        cmd: Some(vec![script.to_string()]),
        labels: Some(HashMap::from([
            (MANAGED_LABEL.to_string(), "true".to_string()),
            (NAMESPACE_LABEL.to_string(), check.namespace.to_string()),
            (DEPENDENCY_LABEL.to_string(), check.dependency.to_string()),
        ])),
        host_config: Some(HostConfig {
            network_mode: Some("host".to_string()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let options = CreateContainerOptionsBuilder::new()
        .name(&check.container)
        .build();
    let created = docker_call(
        &target.connection,
        "creating the import check's container",
        target
            .docker
            .create_container(Some(options.clone()), body.clone()),
    )
    .await;
    match created {
        Ok(_) => Ok(()),
        // Left by a check a controller did not finish: it goes, and this one starts afresh.
        Err(error) if is_conflict(&error) => {
            target.remove_container(&check.container).await?;
            docker_call(
                &target.connection,
                "creating the import check's container",
                target.docker.create_container(Some(options), body),
            )
            .await
            .map(drop)
        }
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_passes_only_when_the_client_got_its_answer() {
        let pg = DependencyKind::Postgres;
        let answered = ["1".to_string()];
        assert_eq!(verdict(pg, Waited::Exited(0), "1", &answered), None);
        let refused = ["psql: error: FATAL:  password authentication failed".to_string()];
        let why = verdict(pg, Waited::Exited(2), "1", &refused).unwrap();
        assert!(why.contains("exit code 2") && why.contains("password authentication"));
        let redis = DependencyKind::Redis;
        let denied = ["WRONGPASS invalid username-password pair".to_string()];
        // redis-cli exits 0 on an error reply: the answer decides.
        assert!(verdict(redis, Waited::Exited(0), "PONG", &denied).is_some());
        assert!(
            verdict(redis, Waited::StillRunning, "PONG", &[])
                .unwrap()
                .contains("no answer")
        );
    }
}
