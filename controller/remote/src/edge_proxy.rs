//! The edge proxy of a server: a Caddy container Berth runs and configures (DESIGN §5). Its admin
//! API listens only on a unix socket in a host directory mounted into the container, so it is
//! reachable through the SSH tunnel and nowhere else.

use std::collections::HashMap;
use std::sync::Arc;

use bollard::Docker;
use bollard::models::{
    ContainerCreateBody, HostConfig, NetworkCreateRequest, PortBinding, RestartPolicy,
    RestartPolicyNameEnum,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, InspectContainerOptions, InspectNetworkOptions,
    RemoveContainerOptionsBuilder, StartContainerOptions,
};
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST};
use http::{Method, Request};
use http_body_util::Full;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

mod networks;

use super::connection::ServerConnection;
use super::docker::{docker_call, docker_over_ssh, is_not_found};
use super::error::RemoteError;
use super::pool::ServerId;
use crate::edge_failures;
use crate::edge_tls::{TlsParts, challenges_first};

/// Docker network the proxy and the applications it routes to share.
pub const EDGE_NETWORK: &str = "berth-edge";
/// Where the admin socket's directory is mounted inside the container (the image's default
/// config listens on `unix//run/caddy/admin.sock`).
const ADMIN_DIR_IN_CONTAINER: &str = "/run/caddy";
/// Label naming what a managed container is.
pub const COMPONENT_LABEL: &str = "berth.dev/component";
/// Label naming the Server object a container belongs to (`namespace/name`).
pub const SERVER_LABEL: &str = "berth.dev/server";
/// Label holding the settings a proxy container was created with; a change recreates it.
const SETTINGS_LABEL: &str = "berth.dev/proxy-settings";

/// Serializes read-modify-write cycles of proxy configurations in this process: deployments
/// switch routes while domains and certificates add theirs.
pub static CONFIG_UPDATES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Serializes creating the edge network (see `ensure_network`).
static NETWORK_CREATION: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What the proxy container should look like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeProxySettings {
    pub image: String,
    pub http_port: u16,
    pub https_port: u16,
}

impl EdgeProxySettings {
    fn label(&self) -> String {
        format!("{}|{}|{}", self.image, self.http_port, self.https_port)
    }
}

/// Where one server's proxy lives on its host. The container name is readable; the admin socket
/// path is hashed because unix socket paths are limited to 108 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeProxyNames {
    pub container: String,
    pub admin_dir: String,
}

impl EdgeProxyNames {
    pub fn for_server(server: &ServerId) -> Self {
        let digest = Sha256::digest(format!("{}/{}", server.namespace, server.name));
        let short: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            container: format!("berth-edge-proxy.{}.{}", server.namespace, server.name),
            admin_dir: format!("/run/berth/edge/{short}"),
        }
    }

    pub fn admin_socket(&self) -> String {
        format!("{}/admin.sock", self.admin_dir)
    }
}

/// What `ensure` had to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyChange {
    Unchanged,
    Created,
    Started,
    Recreated,
}

/// One server's edge proxy, driven over an SSH connection.
pub struct EdgeProxy {
    connection: Arc<ServerConnection>,
    docker: Docker,
    server: ServerId,
    names: EdgeProxyNames,
}

impl EdgeProxy {
    pub fn new(connection: Arc<ServerConnection>, docker_socket: &str, server: &ServerId) -> Self {
        Self {
            docker: docker_over_ssh(connection.clone(), docker_socket),
            connection,
            server: server.clone(),
            names: EdgeProxyNames::for_server(server),
        }
    }

    pub fn names(&self) -> &EdgeProxyNames {
        &self.names
    }

    /// Makes the proxy container exist, match `settings` and run.
    pub async fn ensure(&self, settings: &EdgeProxySettings) -> Result<ProxyChange, RemoteError> {
        self.ensure_network().await?;
        let name = &self.names.container;
        let inspected = docker_call(
            &self.connection,
            "inspecting the edge proxy container",
            self.docker
                .inspect_container(name, None::<InspectContainerOptions>),
        )
        .await;
        let container = match inspected {
            Err(error) if is_not_found(&error) => {
                self.create(settings).await?;
                self.rejoin_preview_networks().await?;
                return Ok(ProxyChange::Created);
            }
            other => other?,
        };
        let labels = container
            .config
            .as_ref()
            .and_then(|c| c.labels.as_ref())
            .cloned()
            .unwrap_or_default();
        if labels.get(SETTINGS_LABEL) != Some(&settings.label()) {
            self.remove().await?;
            self.create(settings).await?;
            self.rejoin_preview_networks().await?;
            return Ok(ProxyChange::Recreated);
        }
        let running = container
            .state
            .as_ref()
            .and_then(|s| s.running)
            .unwrap_or(false);
        if running {
            return Ok(ProxyChange::Unchanged);
        }
        self.start().await?;
        Ok(ProxyChange::Started)
    }

    /// Removes the proxy container; `false` when there was none.
    pub async fn remove(&self) -> Result<bool, RemoteError> {
        let options = RemoveContainerOptionsBuilder::new().force(true).build();
        let removed = docker_call(
            &self.connection,
            "removing the edge proxy container",
            self.docker
                .remove_container(&self.names.container, Some(options)),
        )
        .await;
        match removed {
            Ok(()) => Ok(true),
            Err(error) if is_not_found(&error) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Removes the host directory that held the admin socket (after the container is gone).
    pub async fn remove_admin_dir(&self) -> Result<(), RemoteError> {
        // The path is Berth's own prefix plus hex digits, so it needs no quoting beyond this.
        let command = format!("rm -rf -- '{}'", self.names.admin_dir);
        self.connection.run(&command).await.map(drop)
    }

    /// The configuration Caddy runs now (`GET /config/`).
    pub async fn config(&self) -> Result<Value, RemoteError> {
        let body = self.admin(Method::GET, "/config/", Bytes::new()).await?;
        serde_json::from_slice(&body).map_err(|e| {
            RemoteError::ProxyAdmin(format!("GET /config/ returned invalid JSON: {e}"))
        })
    }

    /// Replaces Caddy's whole configuration (`POST /load`); build it with [`edge_config`] so the
    /// admin endpoint stays on its socket.
    pub async fn load(&self, config: &Value) -> Result<(), RemoteError> {
        let body = serde_json::to_vec(config)
            .map_err(|e| RemoteError::ProxyAdmin(format!("config does not serialize: {e}")))?;
        self.admin(Method::POST, "/load", Bytes::from(body))
            .await
            .map(drop)
    }

    /// Loads the base configuration (only the catch-all 404) when Caddy serves no HTTP app yet,
    /// e.g. after the container was (re)created, or rebuilds one an older Berth wrote that
    /// does not answer failures with evidence yet. Returns whether it loaded one.
    pub async fn ensure_base_config(&self) -> Result<bool, RemoteError> {
        // Serialized with route edits: loading routes read before an edit would drop it.
        let _serialized = CONFIG_UPDATES.lock().await;
        let current = self.config().await?;
        let serving = current
            .pointer("/apps/http")
            .is_some_and(|http| !http.is_null());
        if serving && handles_failures(&current) {
            return Ok(false);
        }
        let mut config = edge_config(resource_routes(&current));
        TlsParts::of(&current).apply_to(&mut config);
        self.load(&config).await?;
        Ok(true)
    }

    /// Rebuilds the configuration around edited routes: `edit` gets the plain server's routes
    /// (those with an `@id`) and the HTTPS side, as running now. Serialized with every other
    /// update in this process; nothing is loaded when nothing changed.
    pub async fn update_routes<F>(&self, edit: F) -> Result<(), RemoteError>
    where
        F: FnOnce(&mut Vec<Value>, &mut TlsParts),
    {
        self.edit_routes(|routes, tls| {
            edit(routes, tls);
            true
        })
        .await
        .map(drop)
    }

    /// [`Self::update_routes`] with an edit that says whether it changed anything: when it
    /// did not, nothing is loaded (Caddy's own spelling of the configuration may differ from
    /// Berth's, so equality alone would reload). Returns whether a configuration was loaded.
    pub async fn edit_routes<F>(&self, edit: F) -> Result<bool, RemoteError>
    where
        F: FnOnce(&mut Vec<Value>, &mut TlsParts) -> bool,
    {
        let _serialized = CONFIG_UPDATES.lock().await;
        let current = self.config().await?;
        let mut routes = resource_routes(&current);
        let mut tls = TlsParts::of(&current);
        if !edit(&mut routes, &mut tls) {
            return Ok(false);
        }
        let mut config = edge_config(challenges_first(routes));
        tls.apply_to(&mut config);
        if config == current {
            return Ok(false);
        }
        self.load(&config).await.map(|()| true)
    }

    /// Writes files into the proxy container's admin directory (e.g. `tls/x.key`), through
    /// Docker's archive API: their content never appears on a command line or in an error.
    pub async fn put_files(&self, files: &[(&str, &[u8])]) -> Result<(), RemoteError> {
        let archive = tar_of(files)
            .map_err(|e| RemoteError::ProxyAdmin(format!("packing files for the proxy: {e}")))?;
        let options = bollard::query_parameters::UploadToContainerOptionsBuilder::new()
            .path(ADMIN_DIR_IN_CONTAINER)
            .build();
        docker_call(
            &self.connection,
            "writing files into the edge proxy container",
            self.docker.upload_to_container(
                &self.names.container,
                Some(options),
                bollard::body_full(Bytes::from(archive)),
            ),
        )
        .await
    }

    async fn network_exists(&self) -> Result<bool, RemoteError> {
        let inspected = docker_call(
            &self.connection,
            "inspecting the edge network",
            self.docker
                .inspect_network(EDGE_NETWORK, None::<InspectNetworkOptions>),
        )
        .await;
        match inspected {
            Ok(_) => Ok(true),
            Err(error) if is_not_found(&error) => Ok(false),
            Err(error) => Err(error),
        }
    }

    async fn ensure_network(&self) -> Result<(), RemoteError> {
        if self.network_exists().await? {
            return Ok(());
        }
        // Docker 20.10 creates a second network of the same name when two requests race, and
        // then refuses the ambiguous name; several Server objects may name one host.
        let _creating = NETWORK_CREATION.lock().await;
        if self.network_exists().await? {
            return Ok(());
        }
        let request = NetworkCreateRequest {
            name: EDGE_NETWORK.into(),
            driver: Some("bridge".into()),
            labels: Some(managed_labels()),
            ..Default::default()
        };
        let created = docker_call(
            &self.connection,
            "creating the edge network",
            self.docker.create_network(request),
        )
        .await;
        match created {
            // Another reconcile may have created it meanwhile.
            Err(RemoteError::Docker {
                source:
                    bollard::errors::Error::DockerResponseServerError {
                        status_code: 409, ..
                    },
                ..
            }) => Ok(()),
            other => other.map(drop),
        }
    }

    async fn create(&self, settings: &EdgeProxySettings) -> Result<(), RemoteError> {
        let options = CreateContainerOptionsBuilder::new()
            .name(&self.names.container)
            .build();
        let body = container_body(&self.server, &self.names, settings);
        docker_call(
            &self.connection,
            "creating the edge proxy container",
            self.docker.create_container(Some(options), body),
        )
        .await?;
        self.start().await
    }

    async fn start(&self) -> Result<(), RemoteError> {
        docker_call(
            &self.connection,
            "starting the edge proxy container",
            self.docker
                .start_container(&self.names.container, None::<StartContainerOptions>),
        )
        .await
    }

    /// One admin API request over the tunnel. Caddy refuses a `Host` it does not allow; an empty
    /// one is allowed on a unix socket listener.
    async fn admin(&self, method: Method, path: &str, body: Bytes) -> Result<Bytes, RemoteError> {
        let request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(HOST, "")
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .map_err(|e| RemoteError::ProxyAdmin(e.to_string()))?;
        let (status, body) = self
            .connection
            .send_http_collect(&self.names.admin_socket(), request)
            .await?;
        if !status.is_success() {
            return Err(RemoteError::ProxyAdmin(format!(
                "{method} {path} answered {status}: {}",
                String::from_utf8_lossy(&body).trim()
            )));
        }
        Ok(body)
    }
}

/// A tar archive of `files` (paths relative to the target directory), readable by the owner
/// only: some hold private keys.
fn tar_of(files: &[(&str, &[u8])]) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut directories: Vec<&str> = Vec::new();
    for (path, _) in files {
        if let Some((directory, _)) = path.rsplit_once('/')
            && !directories.contains(&directory)
        {
            directories.push(directory);
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o700);
            header.set_size(0);
            builder.append_data(&mut header, format!("{directory}/"), std::io::empty())?;
        }
    }
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o600);
        header.set_size(content.len() as u64);
        builder.append_data(&mut header, path, *content)?;
    }
    builder.into_inner()
}

fn managed_labels() -> HashMap<String, String> {
    HashMap::from([(berth_crds::MANAGED_LABEL.to_string(), "true".to_string())])
}

/// The container Docker should create for a server's proxy.
pub fn container_body(
    server: &ServerId,
    names: &EdgeProxyNames,
    settings: &EdgeProxySettings,
) -> ContainerCreateBody {
    let mut labels = managed_labels();
    labels.insert(COMPONENT_LABEL.into(), "edge-proxy".into());
    labels.insert(SERVER_LABEL.into(), server.to_string());
    labels.insert(SETTINGS_LABEL.into(), settings.label());
    let publish = |port: u16| {
        Some(vec![PortBinding {
            host_ip: None,
            host_port: Some(port.to_string()),
        }])
    };
    let port_bindings = HashMap::from([
        ("80/tcp".to_string(), publish(settings.http_port)),
        ("443/tcp".to_string(), publish(settings.https_port)),
    ]);
    ContainerCreateBody {
        image: Some(settings.image.clone()),
        labels: Some(labels),
        exposed_ports: Some(vec!["80/tcp".into(), "443/tcp".into()]),
        host_config: Some(HostConfig {
            binds: Some(vec![format!(
                "{}:{ADMIN_DIR_IN_CONTAINER}",
                names.admin_dir
            )]),
            port_bindings: Some(port_bindings),
            restart_policy: Some(RestartPolicy {
                name: Some(RestartPolicyNameEnum::UNLESS_STOPPED),
                maximum_retry_count: None,
            }),
            network_mode: Some(EDGE_NETWORK.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Caddy `@id` of a resource's route: the controller writes it, the shim's diagnostics read it.
pub fn route_id(namespace: &str, resource: &str) -> String {
    format!("berth-route.{namespace}.{resource}")
}

/// A whole Caddy configuration: the admin endpoint on its socket, `routes` in order, a 404 for
/// unclaimed paths of hosts routed by path prefix, then a catch-all 404; every failure answers
/// with its access-failure evidence (spec §2.2) and a request id, and only failures are logged
/// (see [`edge_failures`](crate::edge_failures)).
pub fn edge_config(routes: Vec<Value>) -> Value {
    let mut all = routes;
    all.extend(edge_failures::path_not_found_routes(&all));
    all.push(edge_failures::not_found_route());
    json!({
        "admin": { "listen": format!("unix/{ADMIN_DIR_IN_CONTAINER}/admin.sock") },
        "logging": edge_failures::logging_config(),
        "apps": { "http": { "servers": { "edge": {
            "listen": [":80"],
            "automatic_https": { "disable": true },
            "routes": all,
            "errors": edge_failures::error_handling(),
            "logs": { "default_logger_name": edge_failures::ACCESS_LOGGER },
        }}}},
    })
}

/// The resource routes of a running configuration (those with an `@id`); `edge_config` adds
/// the rest again.
pub fn resource_routes(config: &Value) -> Vec<Value> {
    config
        .pointer("/apps/http/servers/edge/routes")
        .and_then(Value::as_array)
        .map(|routes| {
            routes
                .iter()
                .filter(|r| r.get("@id").is_some())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a running configuration answers and logs failures the way this Berth does: one
/// written by an older Berth is rebuilt around its routes.
fn handles_failures(config: &Value) -> bool {
    let errors = config.pointer("/apps/http/servers/edge/errors");
    config.get("logging") == Some(&edge_failures::logging_config())
        && errors == Some(&edge_failures::error_handling())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ServerId {
        ServerId {
            namespace: "org-acme".into(),
            name: "web-1".into(),
        }
    }

    #[test]
    fn names_are_per_server_and_the_socket_path_is_short() {
        let names = EdgeProxyNames::for_server(&server());
        assert_eq!(names.container, "berth-edge-proxy.org-acme.web-1");
        let other = EdgeProxyNames::for_server(&ServerId {
            namespace: "org-acme".into(),
            name: "web-2".into(),
        });
        assert_ne!(names.admin_dir, other.admin_dir);
        assert!(names.admin_socket().len() < 108);
    }

    #[test]
    fn container_publishes_ports_mounts_admin_dir_and_carries_labels() {
        let names = EdgeProxyNames::for_server(&server());
        let settings = EdgeProxySettings {
            image: "berth/edge-caddy:2.6.2".into(),
            http_port: 8080,
            https_port: 8443,
        };
        let body = container_body(&server(), &names, &settings);
        let labels = body.labels.unwrap();
        assert_eq!(labels[berth_crds::MANAGED_LABEL], "true");
        assert_eq!(labels[SERVER_LABEL], "org-acme/web-1");
        let host = body.host_config.unwrap();
        assert_eq!(
            host.binds.unwrap(),
            vec![format!("{}:/run/caddy", names.admin_dir)]
        );
        let ports = host.port_bindings.unwrap();
        assert_eq!(
            ports["80/tcp"].as_ref().unwrap()[0].host_port.as_deref(),
            Some("8080")
        );
        assert_eq!(host.network_mode.as_deref(), Some(EDGE_NETWORK));
        assert_eq!(
            host.restart_policy.unwrap().name,
            Some(RestartPolicyNameEnum::UNLESS_STOPPED)
        );
    }

    #[test]
    fn config_keeps_admin_on_the_socket_and_ends_in_a_404() {
        let config = edge_config(vec![json!({"match": [{"host": ["a.example"]}]})]);
        assert_eq!(config["admin"]["listen"], "unix//run/caddy/admin.sock");
        let routes = config
            .pointer("/apps/http/servers/edge/routes")
            .unwrap()
            .as_array()
            .unwrap();
        assert_eq!(routes.len(), 2);
        let last = &routes[1]["handle"][0];
        assert_eq!(last["status_code"], 404);
        assert!(
            last["body"]
                .as_str()
                .unwrap()
                .contains("{http.request.uuid}")
        );
    }

    #[test]
    fn config_logs_only_failures_and_an_older_config_is_rebuilt_around_its_routes() {
        let route = json!({
            "@id": "berth-route.org-acme.web",
            "match": [{"host": ["web.localhost"], "path": ["/app", "/app/*"]}],
            "handle": [edge_failures::route_vars("web", "/app")],
        });
        let config = edge_config(vec![route.clone()]);
        let server = config.pointer("/apps/http/servers/edge").unwrap();
        assert_eq!(server["logs"]["default_logger_name"], "berth_access");
        assert_eq!(server["errors"], edge_failures::error_handling());
        // The resource route, the host's path 404, the catch-all.
        assert_eq!(server["routes"].as_array().unwrap().len(), 3);
        assert!(handles_failures(&config));
        assert_eq!(resource_routes(&config), vec![route.clone()]);

        let mut older = config.clone();
        older.as_object_mut().unwrap().remove("logging");
        assert!(!handles_failures(&older));
        assert_eq!(edge_config(resource_routes(&older)), config);
    }
}
