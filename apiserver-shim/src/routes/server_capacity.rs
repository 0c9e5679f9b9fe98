//! A server's capacity and what of Berth's can go, on Appaloft's routes:
//! `GET /servers/{id}/capacity` (the disk, inodes, memory and CPU of the server read now
//! ([`host`]),
//! Docker's images, build cache and volumes as the server's observer last recorded them, the
//! organization's containers with their writable bytes, read now, and what is safely
//! reclaimable) and
//! `POST /servers/{id}/capacity/prune` (a dry run unless `dryRun: false`). Prune touches only
//! the caller's organization's stopped containers that nothing serves from, and nothing else:
//! images are pruned by the controller after each deploy, volumes hold data.

use std::collections::HashSet;

use axum::extract::{Path, State};
use berth_crds::deployment::DeploymentState;
use berth_crds::member::OrganizationRole;
use berth_crds::monitoring::DiskArtifact;
use berth_crds::server::Server;
use berth_crds::{DEPLOYMENT_LABEL, MANAGED_LABEL, NAMESPACE_LABEL, RESOURCE_LABEL, SIDECAR_LABEL};
use berth_observations::DiskRecord;
use berth_remote::docker::{docker_call, docker_over_ssh};
use bollard::Docker;
use bollard::models::ContainerSummary;
use bollard::query_parameters::{ListContainersOptionsBuilder, RemoveContainerOptionsBuilder};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::objects::all_in;
use crate::domain::servers::server_connection;
use crate::domain::servers::{lookup, writer};
use crate::domain::time::parse_utc;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::json::Json;
use crate::observation_store::store_call;
use crate::services::server_access::remote_error;
use crate::state::AppState;

mod host;

pub use berth_api::server_capacity::{
    Capacity, CpuCapacity, DiskCapacity, DockerUsage, InodeCapacity, MemoryCapacity,
    PlatformContainer, PruneCandidate, PruneReport, PruneRequest, PruneSummary, Reclaimable,
    STOPPED_CONTAINERS, ServerRef,
};

const ACTION: &str = "inspect the server's capacity";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<Capacity, _, _>(
            "/servers/{serverId}/capacity",
            "A server's disk, inodes, memory, CPU and Docker usage, the organization's \
             containers, and what is safely reclaimable",
            inspect,
        ),
        Endpoint::post::<PruneRequest, PruneReport, _, _>(
            "/servers/{serverId}/capacity/prune",
            "Remove the organization's stopped containers nothing serves from (a dry run \
             unless dryRun is false)",
            prune,
        ),
    ]
}

/// One of the organization's containers, as prune judges it.
#[derive(Clone, Debug, PartialEq)]
pub struct Container {
    pub id: String,
    pub name: String,
    pub running: bool,
    /// Unix seconds.
    pub created: i64,
    pub size: i64,
    pub deployment: Option<String>,
    pub resource: Option<String>,
    pub sidecar: bool,
}

/// What must stay: attempts something serves from, or that still run.
#[derive(Default, Debug)]
pub struct Keep {
    /// Each resource's serving attempt and its newest succeeded one (a stopped app restarts
    /// from it; a rollback needs it).
    pub attempts: HashSet<String>,
    /// Attempts that have not ended.
    pub unfinished: HashSet<String>,
}

/// Prune's verdict on each stopped container created before `before` (seconds).
pub fn judge(containers: &[Container], keep: &Keep, before: i64) -> Vec<PruneCandidate> {
    containers
        .iter()
        .filter(|c| !c.running)
        .map(|c| {
            let reason = if c.sidecar {
                Some("active-runtime")
            } else if c
                .deployment
                .as_ref()
                .is_some_and(|d| keep.attempts.contains(d))
            {
                Some("rollback-candidate")
            } else if c
                .deployment
                .as_ref()
                .is_some_and(|d| keep.unfinished.contains(d))
            {
                Some("active-runtime")
            } else if c.created >= before {
                Some("cutoff-not-reached")
            } else {
                None
            };
            PruneCandidate {
                id: c.id.clone(),
                category: STOPPED_CONTAINERS.into(),
                target: c.name.clone(),
                size: c.size,
                action: if reason.is_some() {
                    "skipped"
                } else {
                    "matched"
                }
                .into(),
                skipped_reason: reason.map(str::to_string),
            }
        })
        .collect()
}

fn server_ref(server: &Server) -> ServerRef {
    ServerRef {
        id: server.name_any(),
        name: server.spec.name.clone().unwrap_or_default(),
        host: server.spec.host.clone(),
        port: server.spec.port,
        provider_key: server.spec.provider_key.clone(),
        target_kind: "single-server".into(),
    }
}

/// The serving and newest succeeded attempt of every resource of the organization, and the
/// attempts still running, from the shim's caches.
fn keep_of(state: &AppState, namespace: &str) -> Keep {
    let mut keep = Keep::default();
    for resource in all_in(&state.caches.resources, namespace) {
        let status = resource.status.as_ref();
        if let Some(serving) = status.and_then(|s| s.last_route_realization_deployment_id.clone()) {
            keep.attempts.insert(serving);
        }
    }
    let mut deployments = all_in(&state.caches.deployments, namespace);
    deployments.sort_by_key(|d| d.attempt_order());
    let mut newest_succeeded = std::collections::HashMap::new();
    for deployment in deployments {
        let state = deployment.status.as_ref().and_then(|s| s.status);
        match state {
            Some(DeploymentState::Succeeded) => {
                newest_succeeded.insert(deployment.spec.resource_id.clone(), deployment.name_any());
            }
            Some(s) if s.is_terminal() => {}
            _ => {
                keep.unfinished.insert(deployment.name_any());
            }
        }
    }
    keep.attempts.extend(newest_succeeded.into_values());
    keep
}

fn container_of(summary: &ContainerSummary) -> Option<Container> {
    let labels = summary.labels.clone().unwrap_or_default();
    let name = summary
        .names
        .as_ref()
        .and_then(|n| n.first())
        .map(|n| n.trim_start_matches('/').to_string())
        .unwrap_or_default();
    Some(Container {
        id: summary.id.clone()?,
        name,
        running: matches!(
            summary.state,
            Some(
                bollard::models::ContainerSummaryStateEnum::RUNNING
                    | bollard::models::ContainerSummaryStateEnum::RESTARTING
                    | bollard::models::ContainerSummaryStateEnum::PAUSED
            )
        ),
        created: summary.created.unwrap_or(0),
        size: summary.size_rw.unwrap_or(0),
        deployment: labels.get(DEPLOYMENT_LABEL).cloned(),
        resource: labels.get(RESOURCE_LABEL).cloned(),
        sidecar: labels.contains_key(SIDECAR_LABEL),
    })
}

/// The organization's Berth containers on the server (running or not, with their sizes).
async fn containers(
    connection: &berth_remote::ServerConnection,
    docker: &Docker,
    namespace: &str,
) -> ApiResult<Vec<(ContainerSummary, Container)>> {
    let filters = std::collections::HashMap::from([(
        "label".to_string(),
        vec![
            format!("{MANAGED_LABEL}=true"),
            format!("{NAMESPACE_LABEL}={namespace}"),
        ],
    )]);
    let options = ListContainersOptionsBuilder::new()
        .all(true)
        .size(true)
        .filters(&filters)
        .build();
    let listed = docker_call(
        connection,
        "listing containers",
        docker.list_containers(Some(options)),
    )
    .await
    .map_err(|error| remote_error(ACTION, error))?;
    Ok(listed
        .into_iter()
        .filter_map(|s| container_of(&s).map(|c| (s, c)))
        .collect())
}

async fn inspect(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Capacity>> {
    caller.require_role(OrganizationRole::Member)?;
    let server = lookup(&state, &caller, &id)?;
    let namespace = server.namespace().unwrap_or_default();
    let (connection, _lease) = server_connection(&state, &server, ACTION).await?;
    let docker = docker_over_ssh(connection.clone(), &server.spec.docker_socket_path);
    let mut warnings = Vec::new();
    let store_namespace = namespace.clone();
    let records = store_call(&state.observations, "disk usage", move |store| {
        store.disk(&store_namespace)
    })
    .await?;
    let record = records.iter().find(|r| r.server == id);
    if record.is_none() {
        warnings.push("Docker's disk usage has not been observed on this server yet".into());
    }
    let host = host::read(&connection, &docker, &mut warnings).await;
    let listed = containers(&connection, &docker, &namespace).await?;
    let all: Vec<Container> = listed.iter().map(|(_, c)| c.clone()).collect();
    let usage = docker_usage(record, &all);
    let keep = keep_of(&state, &namespace);
    let now = Timestamp::now().as_second();
    let stopped_size: i64 = judge(&all, &keep, now)
        .iter()
        .filter(|c| c.action == "matched")
        .map(|c| c.size)
        .sum();
    let platform_containers = listed
        .into_iter()
        .map(|(summary, c)| PlatformContainer {
            id: c.id,
            name: c.name,
            running: c.running,
            status: summary.status.unwrap_or_default(),
            writable_bytes: c.size,
            deployment_id: c.deployment,
            resource_id: c.resource,
        })
        .collect();
    Ok(Json(Capacity {
        schema_version: "servers.capacity.inspect/v1".into(),
        server: server_ref(&server),
        inspected_at: Timestamp::now().to_string(),
        partial: !warnings.is_empty(),
        disk: host.disk,
        inodes: host.inodes,
        docker: usage,
        memory: host.memory,
        cpu: host.cpu,
        platform_containers,
        safe_reclaimable_estimate: Reclaimable {
            stopped_containers_size: stopped_size,
            total: stopped_size,
        },
        warnings,
    }))
}

/// Docker's usage as the server's observer last recorded it (no call to the server here),
/// and the organization's containers' writable layers as just listed.
fn docker_usage(record: Option<&DiskRecord>, containers: &[Container]) -> DockerUsage {
    let artifacts = record.map_or(&[][..], |r| r.artifacts.as_slice());
    let bytes = |a: &DiskArtifact| i64::try_from(a.bytes.unwrap_or(0)).unwrap_or(i64::MAX);
    let sum = |kind: &str, unused_only: bool| -> i64 {
        artifacts
            .iter()
            .filter(|a| a.kind == kind && (!unused_only || a.in_use_by == Some(0)))
            .map(bytes)
            .sum()
    };
    DockerUsage {
        images_size: sum("image", false),
        reclaimable_images_size: sum("image", true),
        build_cache_size: sum("build-cache", false),
        reclaimable_build_cache_size: sum("build-cache", true),
        containers_size: containers.iter().map(|c| c.size).sum(),
        volumes_size: sum("volume", false),
    }
}

/// The request checked: (before in seconds, its text, categories, dry run).
fn checked(body: &PruneRequest) -> ApiResult<(i64, String, Vec<String>, bool)> {
    let before = match &body.before {
        Some(text) => parse_utc("before", text)?,
        None => Timestamp::now(),
    };
    body.validate()?;
    let categories = body
        .categories
        .clone()
        .unwrap_or_else(|| vec![STOPPED_CONTAINERS.into()]);
    Ok((
        before.as_second(),
        before.to_string(),
        categories,
        body.dry_run != Some(false),
    ))
}

async fn prune(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PruneRequest>,
) -> ApiResult<Json<PruneReport>> {
    let (before, before_text, categories, dry_run) = checked(&body)?;
    let server = lookup(&state, &caller, &id)?;
    writer(&caller)?;
    let namespace = server.namespace().unwrap_or_default();
    let (connection, _lease) = server_connection(&state, &server, ACTION).await?;
    let docker = docker_over_ssh(connection.clone(), &server.spec.docker_socket_path);
    let listed: Vec<Container> = containers(&connection, &docker, &namespace)
        .await?
        .into_iter()
        .map(|(_, c)| c)
        .filter(|c| {
            body.target
                .as_ref()
                .is_none_or(|t| *t == c.name || c.id.starts_with(t.as_str()))
        })
        .collect();
    let mut candidates = judge(&listed, &keep_of(&state, &namespace), before);
    let mut warnings = Vec::new();
    if !dry_run {
        for candidate in candidates.iter_mut().filter(|c| c.action == "matched") {
            let options = RemoveContainerOptionsBuilder::new()
                .force(false)
                .v(true)
                .build();
            let removed = docker_call(
                &connection,
                "removing a container",
                docker.remove_container(&candidate.id, Some(options)),
            )
            .await;
            match removed {
                Ok(()) => candidate.action = "pruned".into(),
                Err(error) => {
                    warnings.push(format!("{} was not removed: {error}", candidate.target));
                    candidate.action = "skipped".into();
                    candidate.skipped_reason = Some("safety-evidence-missing".into());
                }
            }
        }
        tracing::info!(server = %id, pruned = candidates.iter().filter(|c| c.action == "pruned").count(), "capacity pruned");
    }
    let count = |action: &str| candidates.iter().filter(|c| c.action == action).count();
    let summary = PruneSummary {
        inspected_count: listed.len(),
        matched_count: count("matched") + count("pruned"),
        pruned_count: count("pruned"),
        skipped_count: count("skipped"),
        excluded_count: count("excluded"),
        reclaimed_bytes: candidates
            .iter()
            .filter(|c| c.action == "pruned")
            .map(|c| c.size)
            .sum(),
    };
    Ok(Json(PruneReport {
        schema_version: "servers.capacity.prune/v1".into(),
        server: server_ref(&server),
        before: before_text,
        categories,
        dry_run,
        pruned_at: Timestamp::now().to_string(),
        summary,
        candidates,
        warnings,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, running: bool, deployment: &str) -> Container {
        Container {
            id: format!("id-{name}"),
            name: name.into(),
            running,
            created: 100,
            size: 10,
            deployment: Some(deployment.into()),
            resource: Some("web".into()),
            sidecar: false,
        }
    }

    #[test]
    fn only_stopped_containers_nothing_serves_from_are_pruned() {
        let keep = Keep {
            attempts: HashSet::from(["dep-serving".to_string()]),
            unfinished: HashSet::from(["dep-running".to_string()]),
        };
        let mut sidecar = container("db", false, "dep-old");
        sidecar.sidecar = true;
        let containers = [
            container("live", true, "dep-serving"),
            container("stopped-app", false, "dep-serving"),
            container("leftover", false, "dep-old"),
            container("starting", false, "dep-running"),
            sidecar,
        ];
        let verdicts: Vec<(String, String, Option<String>)> = judge(&containers, &keep, 200)
            .into_iter()
            .map(|c| (c.target, c.action, c.skipped_reason))
            .collect();
        let skipped = |name: &str, why: &str| (name.into(), "skipped".into(), Some(why.into()));
        assert_eq!(
            verdicts,
            vec![
                skipped("stopped-app", "rollback-candidate"),
                ("leftover".into(), "matched".into(), None),
                skipped("starting", "active-runtime"),
                skipped("db", "active-runtime"),
            ]
        );
        let early = judge(&containers[2..3], &keep, 50);
        assert_eq!(
            early[0].skipped_reason.as_deref(),
            Some("cutoff-not-reached")
        );
    }

    #[test]
    fn prune_is_a_dry_run_of_stopped_containers_unless_told() {
        let (_, _, categories, dry_run) = checked(&PruneRequest::default()).unwrap();
        assert_eq!(
            (categories, dry_run),
            (vec![STOPPED_CONTAINERS.to_string()], true)
        );
        let images = PruneRequest {
            categories: Some(vec!["unused-images".into()]),
            ..PruneRequest::default()
        };
        assert_eq!(
            checked(&images).unwrap_err().body.details["field"],
            "categories"
        );
    }
}
