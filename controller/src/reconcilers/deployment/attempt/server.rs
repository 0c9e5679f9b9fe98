//! What an attempt asks of its server's Docker and edge proxy. The attempt's rules (which
//! container goes when, what a re-run reuses) are written against [`AttemptServer`]; the server's
//! own is [`LiveServer`], and the unit tests use an in-memory fake.

use std::future::Future;

use berth_crds::progress::OutputStream;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use super::super::compose::{self, run::StackError, stack::Stack};
use super::super::diagnosis::Evidence;
use super::super::package;
use super::super::package::source::{FetchedSource, SourceAccess};
use super::super::package_failure::PackageFailure;
use super::super::plan::Plan;
use super::super::probe::ProbeError;
use super::super::progress::OutputSink;
use super::super::server_target::{Containers, Target};
use crate::routes::RoutePlan;
use berth_remote::RemoteError;

/// The server side of an attempt.
pub trait AttemptServer: Containers {
    /// Fetches the commit of a git source into the controller's copy; `None` for a source
    /// that is not a repository.
    fn fetch_source(
        &self,
        plan: &Plan,
        output: &OutputSink,
    ) -> impl Future<Output = Result<Option<FetchedSource>, PackageFailure>> + Send;

    /// Gets `plan.image` onto the server: found there, pulled, or built (from `fetched`, the
    /// commit of a git source); a Compose stack's every service image too (the stack).
    fn package(
        &self,
        plan: &Plan,
        fetched: Option<&FetchedSource>,
        output: &OutputSink,
    ) -> impl Future<Output = Result<Option<Stack>, PackageFailure>> + Send;

    /// Brings a stack's other services up (kept when unchanged) and waits for what the routed
    /// service depends on; says what each service did.
    fn bring_up_stack(
        &self,
        stack: &Stack,
    ) -> impl Future<Output = Result<Vec<String>, StackError>> + Send;

    /// Removes the stack's services its Compose file no longer has.
    fn remove_dropped_services(
        &self,
        namespace: &str,
        resource: &str,
        stack: &Stack,
    ) -> impl Future<Output = ()> + Send;

    /// Probes the container until it answers as its health check expects, or says why not.
    fn probe_until_healthy(
        &self,
        plan: &Plan,
    ) -> impl Future<Output = Result<(), ProbeError>> + Send;

    /// What the container shows after a failed check: state, listening ports, last output.
    fn failure_evidence(&self, plan: &Plan) -> impl Future<Output = Evidence> + Send;

    /// Gives the verified container its restart policy, held back while it was checked.
    fn release_restarts(&self, plan: &Plan)
    -> impl Future<Output = Result<(), RemoteError>> + Send;

    /// Puts the running container on the upstream name unless it carries it already.
    fn ensure_promoted(&self, plan: &Plan) -> impl Future<Output = Result<(), RemoteError>> + Send;

    /// Makes the proxy's route `route_id` lead to `target` (or removes it with `None`).
    fn ensure_route(
        &self,
        route_id: &str,
        target: Option<(&RoutePlan, &str, u16)>,
    ) -> impl Future<Output = Result<bool, RemoteError>> + Send;

    /// The resource's managed containers: (name, Deployment that started it).
    fn resource_containers(
        &self,
        namespace: &str,
        resource: &str,
    ) -> impl Future<Output = Result<Vec<(String, String)>, RemoteError>> + Send;

    /// Stops a container gracefully (it finishes the requests it accepted) and removes it.
    fn retire(&self, name: &str) -> impl Future<Output = Result<(), RemoteError>> + Send;

    /// The container's last `lines` lines of output, oldest first.
    fn log_tail(
        &self,
        name: &str,
        lines: usize,
    ) -> impl Future<Output = Result<Vec<(OutputStream, String)>, String>> + Send;

    /// Removes the resource's older built images, never `serving`; failures are only logged.
    fn prune_built_images(
        &self,
        namespace: &str,
        resource: &str,
        serving: &str,
    ) -> impl Future<Output = ()> + Send;
}

/// A server's Docker and edge proxy over its SSH connection, with what packaging needs.
pub struct LiveServer {
    pub target: Target,
    pub docker_socket: String,
    /// The Resource's namespace, where an image pull Secret is read.
    pub secrets: Api<Secret>,
    /// The controller's copies of repositories, and the source's deploy key.
    pub sources: SourceAccess,
}

impl Containers for LiveServer {
    async fn create_container(&self, plan: &Plan, serving: bool) -> Result<bool, RemoteError> {
        self.target.create_container(plan, serving).await
    }

    async fn start(&self, name: &str) -> Result<(), RemoteError> {
        self.target.start(name).await
    }

    async fn running_on(&self, name: &str, network: &str) -> Result<bool, RemoteError> {
        self.target.running_on(name, network).await
    }

    async fn remove_container(&self, name: &str) -> Result<bool, RemoteError> {
        self.target.remove_container(name).await
    }
}

impl AttemptServer for LiveServer {
    async fn fetch_source(
        &self,
        plan: &Plan,
        output: &OutputSink,
    ) -> Result<Option<FetchedSource>, PackageFailure> {
        package::source::fetch(plan, &self.sources, output).await
    }

    async fn package(
        &self,
        plan: &Plan,
        fetched: Option<&FetchedSource>,
        output: &OutputSink,
    ) -> Result<Option<Stack>, PackageFailure> {
        let server = package::Server {
            target: &self.target,
            docker_socket: &self.docker_socket,
            secrets: &self.secrets,
        };
        package::package(server, plan, fetched, &self.sources, output).await
    }

    async fn bring_up_stack(&self, stack: &Stack) -> Result<Vec<String>, StackError> {
        compose::run::bring_up(&self.target, stack).await
    }

    async fn remove_dropped_services(&self, namespace: &str, resource: &str, stack: &Stack) {
        compose::run::remove_dropped(&self.target, namespace, resource, stack).await;
    }

    async fn probe_until_healthy(&self, plan: &Plan) -> Result<(), ProbeError> {
        self.target.probe_until_healthy(plan).await
    }

    async fn failure_evidence(&self, plan: &Plan) -> Evidence {
        self.target.failure_evidence(plan).await
    }

    async fn release_restarts(&self, plan: &Plan) -> Result<(), RemoteError> {
        self.target.release_restarts(plan).await
    }

    async fn ensure_promoted(&self, plan: &Plan) -> Result<(), RemoteError> {
        self.target.ensure_promoted(plan).await
    }

    async fn ensure_route(
        &self,
        route_id: &str,
        target: Option<(&RoutePlan, &str, u16)>,
    ) -> Result<bool, RemoteError> {
        self.target.ensure_route(route_id, target).await
    }

    async fn resource_containers(
        &self,
        namespace: &str,
        resource: &str,
    ) -> Result<Vec<(String, String)>, RemoteError> {
        self.target.resource_containers(namespace, resource).await
    }

    async fn retire(&self, name: &str) -> Result<(), RemoteError> {
        self.target.retire(name).await
    }

    async fn log_tail(
        &self,
        name: &str,
        lines: usize,
    ) -> Result<Vec<(OutputStream, String)>, String> {
        self.target.log_tail(name, lines).await
    }

    async fn prune_built_images(&self, namespace: &str, resource: &str, serving: &str) {
        package::prune_built_images(&self.target, namespace, resource, serving).await;
    }
}
