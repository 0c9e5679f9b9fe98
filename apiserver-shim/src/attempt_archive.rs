//! Keeps every deployment attempt's last state in the observation store, so the REST API lists
//! and shows attempts after berth-controller removed their objects (beyond a resource's
//! `deploymentHistoryLimit`). It follows the change log of the shim's deployment cache: each
//! change replaces the attempt's row, a delete marks it removed. On start, and whenever it
//! fell behind the log, it writes every cached attempt again and marks removed the rows whose
//! object the cache no longer holds. Writing the same row twice is harmless, so several shims
//! may run this side by side.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::deployment::Deployment;
use berth_observations::{AttemptRecord, ShimStore};
use kube::ResourceExt;

use crate::cache::Caches;
use crate::changes::{ChangedObject, Gap};

/// Changes are written together once this long has passed since the first of a batch.
const BATCH: Duration = Duration::from_millis(200);
/// A failed write is tried again after this long.
const RETRY: Duration = Duration::from_secs(5);

/// The row of `deployment`: its last state, found again by namespace and name.
pub fn record(deployment: &Deployment, removed: bool) -> Option<AttemptRecord> {
    let status = deployment
        .status
        .as_ref()
        .and_then(|s| s.status)
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "created".into());
    let created_ms = deployment
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(0, |t| t.0.as_millisecond());
    let spec = &deployment.spec;
    Some(AttemptRecord {
        namespace: deployment.namespace()?,
        deployment: deployment.name_any(),
        resource: spec.resource_id.clone(),
        project: spec.project_id.clone(),
        environment: spec.environment_id.clone(),
        server: spec.server_id.clone(),
        status,
        created_ms,
        removed,
        object: serde_json::to_string(deployment).ok()?,
    })
}

/// The Deployment a row kept.
pub fn object(record: &AttemptRecord) -> Option<Deployment> {
    serde_json::from_str(&record.object).ok()
}

/// Runs until the process ends.
pub async fn run(caches: Caches, store: Arc<dyn ShimStore>) {
    let log = caches.changes.clone();
    let mut wake = log.subscribe();
    let mut position = None;
    loop {
        let synced = match position {
            None => resync(&caches, &store).await.map(|_| log.latest()),
            Some(after) => match log.since(after) {
                Err(Gap) => Err(()),
                Ok(changes) => {
                    let latest = changes.last().map_or(after, |c| c.sequence);
                    let rows: Vec<AttemptRecord> = changes
                        .iter()
                        .filter_map(|change| match &change.object {
                            ChangedObject::Deployment(d) => record(d, change.deleted),
                            _ => None,
                        })
                        .collect();
                    write(&store, rows).await.map(|_| latest)
                }
            },
        };
        match synced {
            Ok(latest) => position = Some(latest),
            // Behind the log, or the store failed: start again from the cache after a pause.
            Err(()) => {
                position = None;
                tokio::time::sleep(RETRY).await;
                continue;
            }
        }
        if wake.changed().await.is_err() {
            return;
        }
        tokio::time::sleep(BATCH).await;
    }
}

/// Writes every cached attempt and marks removed the rows of attempts no longer cached.
async fn resync(caches: &Caches, store: &Arc<dyn ShimStore>) -> Result<(), ()> {
    let cached = caches.deployments.state();
    let live: HashSet<(String, String)> = cached
        .iter()
        .map(|d| (d.namespace().unwrap_or_default(), d.name_any()))
        .collect();
    let rows: Vec<AttemptRecord> = cached.iter().filter_map(|d| record(d, false)).collect();
    write(store, rows).await?;
    let store = store.clone();
    blocking(move || {
        let unremoved = store.unremoved_attempts()?;
        for (namespace, name) in unremoved.into_iter().filter(|key| !live.contains(key)) {
            store.mark_removed(&namespace, &[name])?;
        }
        Ok(())
    })
    .await
}

async fn write(store: &Arc<dyn ShimStore>, rows: Vec<AttemptRecord>) -> Result<(), ()> {
    if rows.is_empty() {
        return Ok(());
    }
    let store = store.clone();
    blocking(move || store.record_attempts(&rows)).await
}

async fn blocking(
    call: impl FnOnce() -> Result<(), berth_observations::StoreError> + Send + 'static,
) -> Result<(), ()> {
    match tokio::task::spawn_blocking(call).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::warn!(%error, "could not keep deployment attempts in the observation store");
            Err(())
        }
        Err(error) => {
            tracing::warn!(%error, "the attempt archive's write stopped");
            Err(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::deployment::DeploymentSpec;

    #[test]
    fn a_row_keeps_the_attempt_and_reads_back_as_it() {
        let spec: DeploymentSpec = serde_json::from_value(serde_json::json!({
            "resourceId": "web", "projectId": "prj-1", "environmentId": "env-1",
            "serverId": "srv-1",
        }))
        .unwrap();
        let mut deployment = Deployment::new("dep-web-1", spec);
        assert!(record(&deployment, false).is_none(), "no namespace, no row");
        deployment.metadata.namespace = Some("org-a".into());
        let row = record(&deployment, true).unwrap();
        assert_eq!((row.status.as_str(), row.removed), ("created", true));
        assert_eq!(
            (row.resource.as_str(), row.server.as_str()),
            ("web", "srv-1")
        );
        let read = object(&row).unwrap();
        assert_eq!(
            (read.spec, read.metadata),
            (deployment.spec, deployment.metadata)
        );
    }
}
