//! A server's Docker and edge proxy as a [`Target`], over the server's SSH connection: the image
//! check, container start and removal, the health probe and the route switch. Attempts use it,
//! and so do drift repair, cleanup and runtime control. (A Resource's "runtime" is its serving
//! container, elsewhere.)

use berth_crds::{DEPLOYMENT_LABEL, SIDECAR_LABEL};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::progress::OutputStream;
use berth_crds::storage_volume::StorageVolumeKind;
use bollard::Docker;
use bollard::container::LogOutput;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerUpdateBody, EndpointSettings,
    HostConfig, Mount, MountType, NetworkConnectRequest, NetworkDisconnectRequest,
    NetworkingConfig, PortBinding, RestartPolicy, RestartPolicyNameEnum,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectContainerOptions, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, StartContainerOptions, StopContainerOptionsBuilder,
};
use serde_json::Value;

mod files;
mod retiring;
mod serving_network;
mod stack_network;

use super::container_settings::{apply_settings, docker_restart};
use super::plan::{Plan, caddy_route};
use crate::routes::RoutePlan;
use berth_remote::docker::{
    self, docker_call, docker_over_ssh, is_conflict, is_not_found, is_not_modified,
};
use berth_remote::edge_proxy::EDGE_NETWORK;
use berth_remote::{EdgeProxy, RemoteError, ServerConnection, ServerId};

/// A server's containers, as far as starting an attempt's container goes.
pub trait Containers: Send + Sync {
    /// Creates the container, not started; `false` when one of that name exists already.
    /// `serving` puts it on the resource's upstream name from the start.
    fn create_container(
        &self,
        plan: &Plan,
        serving: bool,
    ) -> impl Future<Output = Result<bool, RemoteError>> + Send;

    /// Starts an existing container.
    fn start(&self, name: &str) -> impl Future<Output = Result<(), RemoteError>> + Send;

    /// Whether the container runs and is attached to `network` (the one it serves on).
    fn running_on(
        &self,
        name: &str,
        network: &str,
    ) -> impl Future<Output = Result<bool, RemoteError>> + Send;

    /// Removes a container at once (stopping it first); `false` when there was none.
    fn remove_container(
        &self,
        name: &str,
    ) -> impl Future<Output = Result<bool, RemoteError>> + Send;
}

/// Starts the plan's container. One of the same name is the same attempt's own, from a run
/// whose end was never recorded: running on the edge network it may serve already, so it stays
/// and verify judges it like a new one; one cut off the edge network (stopped midway through
/// joining the upstream name) serves nothing and is replaced.
pub async fn start_or_reuse(
    containers: &impl Containers,
    plan: &Plan,
    serving: bool,
) -> Result<(), RemoteError> {
    let name = &plan.container_name;
    // Usually there is no leftover: create first, look only when the name is taken.
    if !containers.create_container(plan, serving).await? {
        if containers.running_on(name, &plan.network).await? {
            return Ok(());
        }
        containers.remove_container(name).await?;
        containers.create_container(plan, serving).await?;
    }
    containers.start(name).await
}

/// How long a retired container has to finish what it accepted after SIGTERM.
pub const RETIRE_GRACE: Duration = Duration::from_secs(5);

/// One server's Docker and edge proxy, reached over its SSH connection.
pub struct Target {
    pub connection: Arc<ServerConnection>,
    pub docker: Docker,
    /// The Docker socket on the server, for the `docker` commands run over SSH.
    pub docker_socket: String,
    pub proxy: EdgeProxy,
}

/// What a stopped container left behind, as Docker reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StopFacts {
    pub exit_code: Option<i64>,
    pub oom_killed: bool,
    /// When it stopped (RFC 3339, as Docker prints it).
    pub finished_at: Option<String>,
    /// Docker's failed health checks, oldest first: exit code and output.
    pub health_log: Vec<(Option<i64>, String)>,
}

impl Target {
    pub fn new(connection: Arc<ServerConnection>, docker_socket: &str, server: &ServerId) -> Self {
        Self {
            docker: docker_over_ssh(connection.clone(), docker_socket),
            proxy: EdgeProxy::new(connection.clone(), docker_socket, server),
            docker_socket: docker_socket.to_string(),
            connection,
        }
    }

    /// Whether `image` exists on the server.
    pub async fn image_present(&self, image: &str) -> Result<bool, RemoteError> {
        self.image_id(image).await.map(|id| id.is_some())
    }

    /// The id of the image `image` names, if the server has it.
    pub async fn image_id(&self, image: &str) -> Result<Option<String>, RemoteError> {
        let inspected = docker_call(
            &self.connection,
            "inspecting the image",
            self.docker.inspect_image(image),
        )
        .await;
        match inspected {
            Ok(found) => Ok(Some(found.id.unwrap_or_default())),
            Err(error) if is_not_found(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Creates and starts the plan's container, or keeps a running one of that name (see
    /// [`start_or_reuse`]).
    pub async fn start_container(&self, plan: &Plan, serving: bool) -> Result<(), RemoteError> {
        start_or_reuse(self, plan, serving).await
    }

    /// Creates the attempt's container (not started); `false` when a container of that name
    /// exists already. A new attempt's container stays off the resource's upstream name until
    /// [`Self::promote`]; a serving one (restored after drift) carries it at once.
    pub async fn create_container(&self, plan: &Plan, serving: bool) -> Result<bool, RemoteError> {
        self.ensure_serving_network(plan).await?;
        let options = CreateContainerOptionsBuilder::new()
            .name(&plan.container_name)
            .build();
        let created = docker_call(
            &self.connection,
            "creating the container",
            self.docker
                .create_container(Some(options), container_body(plan, serving)),
        )
        .await;
        match created {
            Ok(_) => {}
            Err(error) if is_conflict(&error) => return Ok(false),
            Err(error) => return Err(error),
        }
        self.put_plan_files(plan).await?;
        self.join_other_networks(plan).await?;
        Ok(true)
    }

    /// Gives a verified container the restart policy held back while it was checked.
    pub async fn release_restarts(&self, plan: &Plan) -> Result<(), RemoteError> {
        if !plan.restart_held {
            return Ok(());
        }
        let released = Plan {
            restart_held: false,
            ..plan.clone()
        };
        let policy = container_body(&released, false)
            .host_config
            .and_then(|h| h.restart_policy);
        let update = ContainerUpdateBody {
            restart_policy: policy,
            ..Default::default()
        };
        docker_call(
            &self.connection,
            "setting the restart policy",
            self.docker.update_container(&plan.container_name, update),
        )
        .await
    }

    /// Puts the container on the resource's upstream name: requests through the proxy reach it
    /// from now on, beside any older container still carrying the name. Docker sets aliases
    /// only when a container joins a network, so it rejoins (a new container serves nothing yet).
    pub async fn promote(&self, plan: &Plan) -> Result<(), RemoteError> {
        let leave = NetworkDisconnectRequest {
            container: plan.container_name.clone(),
            force: Some(true),
        };
        docker_call(
            &self.connection,
            "leaving the edge network",
            self.docker.disconnect_network(&plan.network, leave),
        )
        .await?;
        let join = NetworkConnectRequest {
            container: plan.container_name.clone(),
            endpoint_config: Some(upstream_endpoint(plan)),
        };
        docker_call(
            &self.connection,
            "joining the edge network as the upstream",
            self.docker.connect_network(&plan.network, join),
        )
        .await
    }

    /// Promotes the running container unless it already carries the upstream name (a
    /// container started before Berth used upstream names, say).
    pub async fn ensure_promoted(&self, plan: &Plan) -> Result<(), RemoteError> {
        let container = self.inspect(&plan.container_name).await?;
        let aliases = container
            .and_then(|c| endpoint_on(c, &plan.network))
            .and_then(|endpoint| endpoint.aliases)
            .unwrap_or_default();
        if aliases.contains(&plan.upstream) {
            return Ok(());
        }
        self.promote(plan).await
    }

    /// Starts an existing container.
    pub async fn start(&self, name: &str) -> Result<(), RemoteError> {
        docker_call(
            &self.connection,
            "starting the container",
            self.docker
                .start_container(name, None::<StartContainerOptions>),
        )
        .await
    }

    /// The container as Docker describes it; `None` when it does not exist.
    pub(crate) async fn inspect(
        &self,
        name: &str,
    ) -> Result<Option<ContainerInspectResponse>, RemoteError> {
        let inspected = docker_call(
            &self.connection,
            "inspecting the container",
            self.docker
                .inspect_container(name, None::<InspectContainerOptions>),
        )
        .await;
        match inspected {
            Ok(container) => Ok(Some(container)),
            Err(error) if is_not_found(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// How a stopped container ended, or `None` when it is gone.
    pub async fn stop_facts(&self, name: &str) -> Result<Option<StopFacts>, RemoteError> {
        let Some(container) = self.inspect(name).await? else {
            return Ok(None);
        };
        let state = container.state.unwrap_or_default();
        let health_log = state
            .health
            .and_then(|h| h.log)
            .unwrap_or_default()
            .into_iter()
            .filter(|check| check.exit_code != Some(0))
            .filter_map(|check| Some((check.exit_code, check.output?)))
            .collect();
        Ok(Some(StopFacts {
            exit_code: state.exit_code,
            oom_killed: state.oom_killed.unwrap_or(false),
            finished_at: state.finished_at,
            health_log,
        }))
    }

    /// Whether the container exists and whether it runs: `None` when it does not exist.
    pub async fn running(&self, name: &str) -> Result<Option<bool>, RemoteError> {
        Ok(self.inspect(name).await?.map(|c| is_running(&c)))
    }

    /// Whether the container runs and is attached to `network`.
    pub async fn running_on(&self, name: &str, network: &str) -> Result<bool, RemoteError> {
        Ok(self
            .inspect(name)
            .await?
            .is_some_and(|c| is_running(&c) && endpoint_on(c, network).is_some()))
    }

    /// Removes a container (stopping it first) with its anonymous volumes; `false` when there
    /// was none. An image's `VOLUME` gets a fresh anonymous volume per container, which no later
    /// container reads: kept, each redeploy would leave a copy of what the container held.
    pub async fn remove_container(&self, name: &str) -> Result<bool, RemoteError> {
        let options = RemoveContainerOptionsBuilder::new()
            .force(true)
            .v(true)
            .build();
        let removed = docker_call(
            &self.connection,
            "removing the container",
            self.docker.remove_container(name, Some(options)),
        )
        .await;
        match removed {
            Ok(()) => Ok(true),
            Err(error) if is_not_found(&error) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Stops a container gracefully (SIGTERM, then SIGKILL after `grace`) and keeps it, for a
    /// later start. `false` when there was nothing to stop (already stopped, or gone).
    pub async fn stop(&self, name: &str, grace: Duration) -> Result<bool, RemoteError> {
        let seconds = i32::try_from(grace.as_secs()).unwrap_or(i32::MAX);
        let options = StopContainerOptionsBuilder::new().t(seconds).build();
        let stopped = docker_call(
            &self.connection,
            "stopping the container",
            self.docker.stop_container(name, Some(options)),
        )
        .await;
        match stopped {
            Ok(()) => Ok(true),
            // 304: already stopped.
            Err(error) if is_not_found(&error) || is_not_modified(&error) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// The resource's managed containers on this server: (name, Deployment that started it).
    pub async fn resource_containers(
        &self,
        namespace: &str,
        resource: &str,
    ) -> Result<Vec<(String, String)>, RemoteError> {
        let containers =
            docker::resource_containers(&self.connection, &self.docker, namespace, resource)
                .await?;
        // A stack's long-lived services are the stack's, not one attempt's.
        Ok(containers
            .into_iter()
            .filter(|c| {
                !c.labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key(SIDECAR_LABEL))
            })
            .filter_map(|c| {
                let deployment = c.labels.as_ref()?.get(DEPLOYMENT_LABEL)?.clone();
                let name = c.names?.into_iter().next()?;
                Some((name.trim_start_matches('/').to_string(), deployment))
            })
            .collect())
    }

    /// The containers of the resource's scheduled task runs on this server (running or not).
    pub async fn task_run_containers(
        &self,
        namespace: &str,
        resource: &str,
    ) -> Result<Vec<String>, RemoteError> {
        let containers =
            docker::resource_containers(&self.connection, &self.docker, namespace, resource)
                .await?;
        Ok(containers
            .into_iter()
            .filter(|c| {
                c.labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key(berth_crds::scheduled_task::TASK_RUN_LABEL))
            })
            .filter_map(|c| {
                Some(
                    c.names?
                        .into_iter()
                        .next()?
                        .trim_start_matches('/')
                        .to_string(),
                )
            })
            .collect())
    }

    /// The last `lines` lines the container wrote, oldest first, each with its stream.
    pub async fn log_tail(
        &self,
        name: &str,
        lines: usize,
    ) -> Result<Vec<(OutputStream, String)>, String> {
        use futures::StreamExt;
        let options = LogsOptionsBuilder::new()
            .stdout(true)
            .stderr(true)
            .tail(&lines.to_string())
            .build();
        let mut logs = self.docker.logs(name, Some(options));
        let mut tail = Vec::new();
        while let Some(chunk) = logs.next().await {
            let (stream, message) = match chunk.map_err(|e| e.to_string())? {
                LogOutput::StdErr { message } => (OutputStream::Stderr, message),
                LogOutput::StdOut { message } | LogOutput::Console { message } => {
                    (OutputStream::Stdout, message)
                }
                LogOutput::StdIn { .. } => continue,
            };
            let text = String::from_utf8_lossy(&message);
            tail.extend(
                text.lines()
                    .filter(|line| !line.trim().is_empty())
                    .map(|line| (stream, line.to_string())),
            );
        }
        Ok(tail)
    }

    /// Puts the resource's route back when the proxy lost or changed it: a restarted proxy
    /// starts from its base configuration. Returns whether the route had to be written; a load
    /// only when the route differs.
    pub async fn ensure_route(
        &self,
        route_id: &str,
        target: Option<(&RoutePlan, &str, u16)>,
    ) -> Result<bool, RemoteError> {
        let wanted = target.map(|(route, upstream, port)| caddy_route(route, upstream, port));
        // One read of the configuration, under the proxy's update lock; an unchanged route is
        // never loaded (a reload under load can cost a request).
        self.proxy
            .edit_routes(|routes, _tls| replace_route(routes, route_id, wanted))
            .await
    }

    /// Points the resource's route at `upstream:port` (or removes it with `None`), keeping
    /// every other route of the proxy.
    pub async fn switch_route(
        &self,
        route_id: &str,
        target: Option<(&RoutePlan, &str, u16)>,
    ) -> Result<(), RemoteError> {
        // Every other route, the domains' and certificates' included, stays as it is.
        self.proxy
            .update_routes(|routes, _tls| {
                routes.retain(|r| r.get("@id").is_some_and(|id| id != route_id));
                if let Some((route, upstream, port)) = target {
                    routes.push(caddy_route(route, upstream, port));
                }
            })
            .await
    }
}

/// Makes the route `route_id` among `routes` the `wanted` one (or removes it with `None`);
/// whether anything changed. Only the matcher and the handler decide where requests go.
fn replace_route(routes: &mut Vec<Value>, route_id: &str, wanted: Option<Value>) -> bool {
    let is_it = |route: &Value| route.get("@id").and_then(Value::as_str) == Some(route_id);
    let essence = |route: &Value| (route.get("match").cloned(), route.get("handle").cloned());
    let present = routes.iter().find(|route| is_it(route));
    if present.map(essence) == wanted.as_ref().map(essence) {
        return false;
    }
    routes.retain(|route| !is_it(route));
    routes.extend(wanted);
    true
}

impl Containers for Target {
    async fn create_container(&self, plan: &Plan, serving: bool) -> Result<bool, RemoteError> {
        Target::create_container(self, plan, serving).await
    }

    async fn start(&self, name: &str) -> Result<(), RemoteError> {
        Target::start(self, name).await
    }

    async fn running_on(&self, name: &str, network: &str) -> Result<bool, RemoteError> {
        Target::running_on(self, name, network).await
    }

    async fn remove_container(&self, name: &str) -> Result<bool, RemoteError> {
        Target::remove_container(self, name).await
    }
}

pub(super) fn is_running(container: &ContainerInspectResponse) -> bool {
    container
        .state
        .as_ref()
        .and_then(|s| s.running)
        .unwrap_or(false)
}

/// The container's address the health probe reaches: on the edge network, else on the first
/// network it has an address on (a preview's own network).
pub(super) fn serving_address(container: ContainerInspectResponse) -> Option<String> {
    let mut networks: Vec<(String, EndpointSettings)> =
        container.network_settings?.networks?.into_iter().collect();
    networks.sort_by_key(|(name, _)| (name != EDGE_NETWORK, name.clone()));
    networks
        .into_iter()
        .filter_map(|(_, endpoint)| endpoint.ip_address)
        .find(|ip| !ip.is_empty())
}

/// The container's endpoint on `network`, if it is attached.
pub(super) fn endpoint_on(
    container: ContainerInspectResponse,
    network: &str,
) -> Option<EndpointSettings> {
    container.network_settings?.networks?.remove(network)
}

/// The container's membership of the edge network when it carries the upstream name.
fn upstream_endpoint(plan: &Plan) -> EndpointSettings {
    EndpointSettings {
        aliases: Some(vec![plan.upstream.clone()]),
        ..Default::default()
    }
}

/// The container Docker creates for an attempt; `serving` puts it on the upstream name.
pub fn container_body(plan: &Plan, serving: bool) -> ContainerCreateBody {
    let restart = docker_restart(plan.restart_policy);
    // A start command replaces the image's entrypoint and command, as `sh -c` runs it.
    let (entrypoint, cmd) = match &plan.start_command {
        Some(command) => (
            Some(vec!["/bin/sh".to_string(), "-c".to_string()]),
            Some(vec![command.clone()]),
        ),
        None => (None, None),
    };
    let mut body = ContainerCreateBody {
        image: Some(plan.image.clone()),
        entrypoint,
        cmd,
        labels: Some(plan.labels.clone()),
        env: Some(plan.env.clone()),
        exposed_ports: plan.internal_port.map(|port| vec![format!("{port}/tcp")]),
        host_config: Some(HostConfig {
            restart_policy: Some(RestartPolicy {
                name: Some(restart),
                maximum_retry_count: None,
            }),
            network_mode: Some(plan.network.clone()),
            mounts: Some(
                plan.volumes
                    .iter()
                    .map(|mount| Mount {
                        typ: Some(match mount.kind {
                            StorageVolumeKind::NamedVolume => MountType::VOLUME,
                            StorageVolumeKind::BindMount => MountType::BIND,
                        }),
                        source: Some(mount.source.clone()),
                        target: Some(mount.target.clone()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            port_bindings: plan
                .host_port
                .zip(plan.internal_port)
                .map(|(host_port, port)| {
                    HashMap::from([(
                        format!("{port}/tcp"),
                        Some(vec![PortBinding {
                            host_ip: None,
                            host_port: Some(host_port.to_string()),
                        }]),
                    )])
                }),
            ..Default::default()
        }),
        networking_config: serving.then(|| NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                plan.network.clone(),
                upstream_endpoint(plan),
            )])),
        }),
        ..Default::default()
    };
    if let Some(settings) = &plan.compose {
        apply_settings(&mut body, settings);
    }
    if plan.restart_held
        && let Some(host) = body.host_config.as_mut()
    {
        host.restart_policy = Some(RestartPolicy {
            name: Some(RestartPolicyNameEnum::NO),
            maximum_retry_count: None,
        });
    }
    body
}

#[cfg(test)]
mod tests {
    use super::replace_route;
    use serde_json::{Value, json};

    fn route(id: &str, upstream: &str) -> Value {
        json!({ "@id": id, "match": [{ "host": [id] }], "handle": [{ "upstream": upstream }] })
    }

    #[test]
    fn a_route_that_leads_where_wanted_is_left_alone() {
        let mut routes = vec![route("a", "one"), route("b", "two")];
        let mut same = route("a", "one");
        same["terminal"] = json!(true);
        assert!(!replace_route(&mut routes, "a", Some(same)));
        assert_eq!(routes, [route("a", "one"), route("b", "two")]);
    }

    #[test]
    fn a_changed_route_replaces_the_old_and_keeps_the_others() {
        let mut routes = vec![route("a", "one"), route("b", "two")];
        assert!(replace_route(&mut routes, "a", Some(route("a", "three"))));
        assert_eq!(routes, [route("b", "two"), route("a", "three")]);
        assert!(replace_route(&mut routes, "c", Some(route("c", "four"))));
        assert_eq!(routes.len(), 3);
    }

    #[test]
    fn none_removes_the_route_and_says_so_only_when_it_was_there() {
        let mut routes = vec![route("a", "one"), route("b", "two")];
        assert!(replace_route(&mut routes, "a", None));
        assert_eq!(routes, [route("b", "two")]);
        assert!(!replace_route(&mut routes, "a", None));
    }
}
