//! BackupTarget: checks that a target can take artifacts when it is created or changed (a
//! server directory: made when missing, a file written and removed; a bucket: its keys read,
//! an object written and removed), and says so in `Ready`. A failing check is retried every [`RECHECK`]; a passing one costs nothing after.

use std::sync::Arc;
use std::time::Duration;

use berth_crds::backup::{
    BackupTarget, BackupTargetSpec, BackupTargetStatus, S3Target, ServerDirectory, TargetPlace,
};
use berth_crds::condition::{self, READY};
use berth_remote::shell_quote;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

use super::s3::BucketStore;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::deployment::connect;
use crate::reconcilers::policy::{drain, error_policy};
use crate::status::StatusWriter;

const KIND: &str = "BackupTarget";
/// How soon a target that failed its check is checked again.
const RECHECK: Duration = Duration::from_secs(60);

/// Runs the target controller on its own watch until `shutdown`.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let api = Api::<BackupTarget>::all(context.client.clone());
    let stream = Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// Writes a probe file into the directory and removes it.
fn probe_command(path: &str) -> String {
    let probe = format!("{}/.berth-probe", path.trim_end_matches('/'));
    format!(
        "mkdir -p {dir} && touch {probe} && rm -f {probe}",
        dir = shell_quote(path),
        probe = shell_quote(&probe)
    )
}

async fn reconcile(target: Arc<BackupTarget>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let generation = target.metadata.generation;
    let current = target.status.clone().unwrap_or_default();
    let checked =
        current.observed_generation == generation && condition::is_true(&current.conditions, READY);
    if checked {
        return Ok(Action::await_change());
    }
    let namespace = target
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let (reason, problem) = match target.spec.place() {
        Err(why) => ("InvalidSpec", Some(why)),
        Ok(TargetPlace::Directory(place)) => (
            "NotWritable",
            directory_problem(&context, &namespace, place).await?,
        ),
        Ok(TargetPlace::Bucket(s3)) => (
            "NotWritable",
            bucket_problem(&context, &namespace, s3).await?,
        ),
    };
    let stamp = Stamp {
        generation,
        now: Timestamp::now(),
    };
    let ready = match &problem {
        None => stamp.ready("Writable", takes_artifacts(&target.spec)),
        Some(why) => stamp.not_ready(reason, why.clone()),
    };
    let mut status = BackupTargetStatus {
        observed_generation: generation,
        conditions: current.conditions.clone(),
    };
    condition::merge(&mut status.conditions, ready);
    let api = Api::<BackupTarget>::namespaced(context.client.clone(), &namespace);
    StatusWriter::new(&api, &target)
        .apply(target.status.as_ref(), &status)
        .await?;
    Ok(match problem {
        None => Action::await_change(),
        Some(_) => Action::requeue(RECHECK),
    })
}

/// Why a directory on a server cannot take artifacts, if it cannot.
async fn directory_problem(
    context: &Context,
    namespace: &str,
    place: &ServerDirectory,
) -> Result<Option<String>> {
    Ok(match connect(context, namespace, &place.server_id).await {
        Ok((_, server)) => {
            let output = server.connection.exec(&probe_command(&place.path)).await?;
            let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
            (output.exit_status != Some(0))
                .then(|| format!("{} cannot be written: {said}", place.path))
        }
        Err(Error::InvalidSpec(why)) => Some(why),
        Err(error) => Some(format!(
            "server {} cannot be reached: {error}",
            place.server_id
        )),
    })
}

/// Why a bucket cannot take artifacts, if it cannot: its keys are read and a probe object is
/// written and removed under the target's prefix.
async fn bucket_problem(
    context: &Context,
    namespace: &str,
    s3: &S3Target,
) -> Result<Option<String>> {
    let bucket = match BucketStore::open(&context.client, namespace, s3, None).await? {
        Ok(bucket) => bucket,
        Err(why) => return Ok(Some(why)),
    };
    let probe = s3.bucket.artifact_key(namespace, ".berth-probe", "probe");
    Ok(bucket.probe(&probe).await.err().map(|why| {
        format!(
            "bucket {} at {}: {why}",
            s3.bucket.bucket, s3.bucket.endpoint
        )
    }))
}

/// What a Ready target says it offers.
fn takes_artifacts(spec: &BackupTargetSpec) -> String {
    match spec.place() {
        Ok(TargetPlace::Directory(place)) => format!(
            "{} on server {} takes artifacts",
            place.path, place.server_id
        ),
        Ok(TargetPlace::Bucket(s3)) => format!(
            "bucket {} at {} takes artifacts",
            s3.bucket.bucket, s3.bucket.endpoint
        ),
        Err(why) => why,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_probe_makes_the_directory_and_leaves_nothing() {
        assert_eq!(
            super::probe_command("/srv/backups/"),
            "mkdir -p '/srv/backups/' && touch '/srv/backups/.berth-probe' && rm -f '/srv/backups/.berth-probe'"
        );
    }
}
