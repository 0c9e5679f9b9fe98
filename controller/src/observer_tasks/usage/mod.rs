//! The observer's third follower: runtime monitoring without an agent (spec §4.5). Every
//! `interval` it reads the server's counters in one exec round trip ([`probe`]), turns them
//! into samples — the host's totals, and each running managed container's, attributed through
//! its labels to project, environment, resource and deployment — and stores them in the
//! observation store. A tick the server cannot answer stores nothing: the gap is what the
//! samples endpoint reports as `missing-samples`.

pub mod probe;
pub mod thresholds;
mod totals;

use std::sync::Arc;

use berth_crds::monitoring::{
    DiskArtifact, MonitoringSample, PROVIDER_KEY, SampleLabels, ScopeEvidence, ScopeKind, Totals,
};
use berth_observations::{DiskRecord, SampleRecord};
use berth_remote::ServerId;
use berth_remote::docker::docker_over_ssh;
use k8s_openapi::jiff::Timestamp;

use self::probe::Reading;
use self::totals::{DockerStorage, container_totals, host_totals};
use crate::cache::Caches;
use crate::context::Context;
use crate::observer::{Connectivity, MonitoringSettings, ObservedServer};
use crate::server_connections::{server_connection, server_exec};

/// Image, volume, build-cache and writable-layer bytes make Docker walk every image and
/// container layer and every volume: read every this many ticks, not every tick (and at once
/// when the running containers changed).
const DOCKER_STORAGE_EVERY: u64 = 10;

/// Collects samples of server `id` until the observer stops.
pub async fn collect(
    context: Arc<Context>,
    id: ServerId,
    observed: Arc<ObservedServer>,
    settings: MonitoringSettings,
) {
    let mut ticks = tokio::time::interval(settings.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut previous: Option<Reading> = None;
    let mut storage = DockerStorage::default();
    let mut root: Option<String> = None;
    // The running containers at the last storage read: a deploy changes them, and the disk.
    let mut read_with: Option<Vec<String>> = None;
    for tick in 0u64.. {
        ticks.tick().await;
        if observed.connectivity() != Connectivity::Live {
            previous = None;
            continue;
        }
        let running = running_ids(&observed, &id.namespace);
        if read_with.as_ref() != Some(&running) || tick % DOCKER_STORAGE_EVERY == 0 {
            match read_docker_storage(&context, &id).await {
                Ok((data_root, read)) => {
                    root = Some(data_root);
                    store_disk(&context, &id, &read).await;
                    storage = read;
                    read_with = Some(running);
                }
                Err(error) => tracing::debug!(server = %id, %error, "docker storage unread"),
            }
        }
        let data_root = root.as_deref().unwrap_or("/var/lib/docker");
        match sample_once(
            &context,
            &id,
            &observed,
            data_root,
            previous.as_ref(),
            &storage,
        )
        .await
        {
            Ok(reading) => previous = Some(reading),
            Err(error) => {
                tracing::debug!(server = %id, %error, "no monitoring sample this tick");
                previous = None;
            }
        }
    }
}

/// The ids of the server's organization's managed containers running now, sorted.
fn running_ids(observed: &ObservedServer, namespace: &str) -> Vec<String> {
    let mut ids: Vec<String> = observed
        .running_applications()
        .into_iter()
        .filter(|c| c.owner.as_ref().is_some_and(|o| o.namespace == namespace))
        .map(|c| c.id)
        .collect();
    ids.sort();
    ids
}

/// One tick: read, compute against the previous reading, attribute, store.
async fn sample_once(
    context: &Context,
    id: &ServerId,
    observed: &ObservedServer,
    data_root: &str,
    previous: Option<&Reading>,
    storage: &DockerStorage,
) -> Result<Reading, String> {
    let containers = observed.running_applications();
    let ids: Vec<String> = containers.iter().map(|c| c.id.clone()).collect();
    let observed_at = Timestamp::now();
    let output = server_exec(
        context,
        &id.namespace,
        &id.name,
        &probe::command(data_root, &ids),
    )
    .await
    .map_err(|e| e.to_string())?;
    let collected_at = Timestamp::now();
    let reading = probe::parse(&output.stdout_text());
    let stamp = Stamps::new(id, observed_at, collected_at);
    let mut samples = vec![stamp.host(host_totals(previous, &reading, storage))];
    for container in &containers {
        // Another organization's container on the same machine is not this server's to report.
        let Some(owner) = container
            .owner
            .as_ref()
            .filter(|o| o.namespace == id.namespace)
        else {
            continue;
        };
        let totals = container_totals(previous, &reading, &container.id, storage);
        let resource = Caches::get(&context.caches.resources, &owner.namespace, &owner.resource);
        let scope = ScopeEvidence {
            scope: Some(ScopeKind::Resource),
            server_id: id.name.clone(),
            project_id: resource.as_ref().map(|r| r.spec.project_id.clone()),
            environment_id: resource.as_ref().map(|r| r.spec.environment_id.clone()),
            resource_id: Some(owner.resource.clone()),
            deployment_id: Some(owner.deployment.clone()),
        };
        samples.push(stamp.container(&container.id, scope, totals));
    }
    thresholds::evaluate(context, id, &samples).await;
    store(context, &id.namespace, stamp.observed_ms, samples).await;
    Ok(reading)
}

/// Times and ids shared by the samples of one tick.
struct Stamps<'a> {
    server: &'a ServerId,
    observed_ms: i64,
    observed_at: String,
    collected_at: String,
}

impl<'a> Stamps<'a> {
    fn new(server: &'a ServerId, observed_at: Timestamp, collected_at: Timestamp) -> Self {
        Self {
            server,
            observed_ms: observed_at.as_millisecond(),
            observed_at: format!("{observed_at:.3}"),
            collected_at: format!("{collected_at:.3}"),
        }
    }

    fn host(&self, totals: Totals) -> MonitoringSample {
        let scope = ScopeEvidence {
            scope: Some(ScopeKind::Server),
            server_id: self.server.name.clone(),
            ..ScopeEvidence::default()
        };
        self.sample("host", None, scope, totals)
    }

    fn container(&self, id: &str, scope: ScopeEvidence, totals: Totals) -> MonitoringSample {
        self.sample("container", Some(id), scope, totals)
    }

    fn sample(
        &self,
        kind: &str,
        runtime: Option<&str>,
        scope: ScopeEvidence,
        totals: Totals,
    ) -> MonitoringSample {
        let short = runtime.map_or("host", |id| &id[..id.len().min(12)]);
        MonitoringSample {
            sample_id: format!("{}:{short}:{}", self.server, self.observed_ms),
            observed_at: self.observed_at.clone(),
            collected_at: self.collected_at.clone(),
            scope_evidence: scope,
            partial: totals == Totals::default(),
            totals,
            freshness: "live".into(),
            labels: SampleLabels {
                provider_key: PROVIDER_KEY.into(),
                artifact_kind: kind.into(),
                runtime_id: runtime.map(str::to_string),
            },
            warnings: Vec::new(),
            source_errors: Vec::new(),
        }
    }
}

/// Docker's data root and what its images, build cache and containers take. `/system/df` is read raw:
/// its shape changed with API 1.52, and older daemons answer the older one.
async fn read_docker_storage(
    context: &Context,
    id: &ServerId,
) -> Result<(String, DockerStorage), String> {
    let (server, connection) = server_connection(context, &id.namespace, &id.name)
        .await
        .map_err(|e| e.to_string())?;
    let socket = &server.spec.docker_socket_path;
    let docker = docker_over_ssh(Arc::clone(&connection), socket);
    let info = docker.info().await.map_err(|e| e.to_string())?;
    let request =
        http::Request::get("/system/df?type=image&type=build-cache&type=container&type=volume")
            .header(http::header::HOST, "docker")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .map_err(|e| e.to_string())?;
    let (status, body) = connection
        .send_http_collect(socket, request)
        .await
        .map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("Docker answered {status} to /system/df"));
    }
    let df: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    let root = info
        .docker_root_dir
        .unwrap_or_else(|| "/var/lib/docker".into());
    let mut storage = DockerStorage::from_df(&df);
    count_volume_inodes(&connection, &mut storage.artifacts).await;
    Ok((root, storage))
}

/// Counts the files and directories of each local volume (Docker does not), in one exec; a
/// volume it cannot read keeps no count.
async fn count_volume_inodes(
    connection: &berth_remote::ServerConnection,
    artifacts: &mut [DiskArtifact],
) {
    let mountpoints: Vec<String> = artifacts
        .iter()
        .filter_map(|a| a.mountpoint.as_deref().map(berth_remote::shell_quote))
        .collect();
    if mountpoints.is_empty() {
        return;
    }
    let command = format!(
        "for d in {}; do [ -d \"$d\" ] && echo \"$(find \"$d\" -xdev 2>/dev/null | wc -l) $d\"; done",
        mountpoints.join(" ")
    );
    let output = match connection.exec(&command).await {
        Ok(output) => output.stdout_text(),
        Err(error) => {
            tracing::debug!(%error, "volume inodes uncounted");
            return;
        }
    };
    let counts: std::collections::HashMap<&str, u64> = output
        .lines()
        .filter_map(|line| {
            let (count, path) = line.trim_start().split_once(' ')?;
            Some((path, count.parse().ok()?))
        })
        .collect();
    for artifact in artifacts {
        if let Some(path) = artifact.mountpoint.as_deref() {
            artifact.inode_count = counts.get(path).copied();
        }
    }
}

/// Keeps what the server's images, volumes and build cache take, replacing the previous read;
/// a store that fails keeps the previous, with a warning.
async fn store_disk(context: &Context, id: &ServerId, storage: &DockerStorage) {
    let Some(store) = context.observations.store() else {
        return;
    };
    let record = DiskRecord {
        namespace: id.namespace.clone(),
        server: id.name.clone(),
        observed_ms: Timestamp::now().as_millisecond(),
        artifacts: storage.artifacts.clone(),
    };
    match tokio::task::spawn_blocking(move || store.record_disk(&record)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "could not store disk artifacts"),
        Err(error) => tracing::warn!(%error, "storing disk artifacts stopped"),
    }
}

/// Stores one tick's samples; a store that fails loses them, with a warning.
async fn store(
    context: &Context,
    namespace: &str,
    observed_ms: i64,
    samples: Vec<MonitoringSample>,
) {
    let Some(store) = context.observations.store() else {
        return;
    };
    let records: Vec<SampleRecord> = samples
        .into_iter()
        .map(|sample| SampleRecord {
            namespace: namespace.to_string(),
            observed_ms,
            sample,
        })
        .collect();
    let stored = tokio::task::spawn_blocking(move || store.record_samples(&records)).await;
    match stored {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::warn!(%error, "could not store monitoring samples"),
        Err(error) => tracing::warn!(%error, "storing monitoring samples stopped"),
    }
}
