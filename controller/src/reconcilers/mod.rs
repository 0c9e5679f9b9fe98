//! One reconciler per kind. Each reads as a pipeline: observe → plan (pure) → apply → status.
//! This module only wires them: it declares them, subscribes each to the shared watches and runs
//! them; what they share (error policy, resync) is in `policy`.

pub mod archive;
pub mod backup;
pub mod bookkeeping;
pub mod bookkept_kinds;
pub mod certificate;
pub mod container_exec;
pub mod dependency;
pub mod deployment;
pub mod domain_binding;
pub mod environment;
pub mod event_reason;
pub mod fresh;
pub mod migration;
pub mod notifications;
pub mod organization;
pub mod policy;
pub mod postgres_shell;
pub mod preview;
pub mod project;
pub mod resource;
pub mod retention;
pub mod retention_seeds;
pub mod scheduled_task;
pub mod server;
pub mod slots;
pub mod ssh_credential;
pub mod storage_volume;

use std::sync::Arc;

use berth_crds::{
    backup_policy::{DependencyResourceBackupPolicy, StorageVolumeBackupPolicy},
    deploy_token::DeployToken,
    invitation::Invitation,
    member::Member,
    overlay_decision::OverlayDecision,
    preview::PreviewPolicy,
    project::Project,
    resource::Resource as BerthResource,
    retention_policy::RetentionPolicy,
    route_surface_decision::RouteSurfaceDecision,
    session::Session,
    threshold_policy::ThresholdPolicy,
    usage_intent::UsageIntent,
    user::User,
};

use crate::cache::Feeds;
use crate::cache::Subscription;
use crate::context::Context;
use crate::observer::WakeReceivers;

/// What every controller reacts to: subscriptions to the shared watches, taken before they
/// start, and the server observers' wake-ups.
struct Inputs {
    resources: resource::Inputs,
    servers: server::Inputs,
    deployments: deployment::Inputs,
    organizations: organization::Inputs,
    projects: Subscription<Project>,
    environments: environment::Inputs,
    credentials: ssh_credential::Inputs,
    certificates: certificate::Inputs,
    domain_bindings: domain_binding::Inputs,
    members: bookkeeping::Shared<Member>,
    threshold_policies: bookkeeping::Shared<ThresholdPolicy>,
    retention_policies: bookkeeping::Shared<RetentionPolicy>,
    storage_volumes: storage_volume::Inputs,
    previews: preview::Inputs,
    retention: Subscription<RetentionPolicy>,
    health_changes: Subscription<BerthResource>,
    dependencies: futures::channel::mpsc::UnboundedReceiver<crate::observer::DependencyWake>,
}

impl Inputs {
    fn subscribe(feeds: &Feeds, wakes: WakeReceivers) -> Self {
        Self {
            resources: resource::Inputs {
                resources: feeds.resources.subscribe(),
                deployments: feeds.deployments.subscribe(),
                secrets: feeds.secrets.subscribe(),
                environments: feeds.environments.subscribe(),
                projects: feeds.projects.subscribe(),
                organizations: feeds.organizations.subscribe(),
                domain_bindings: feeds.domain_bindings.subscribe(),
                woken: wakes.resources,
            },
            servers: server::Inputs {
                servers: feeds.servers.subscribe(),
                credentials: feeds.credentials.subscribe(),
                secrets: feeds.secrets.subscribe(),
                resources: feeds.resources.subscribe(),
                deployments: feeds.deployments.subscribe(),
                woken: wakes.servers,
            },
            deployments: deployment::Inputs {
                deployments: feeds.deployments.subscribe(),
                servers: feeds.servers.subscribe(),
            },
            organizations: organization::Inputs {
                organizations: feeds.organizations.subscribe(),
                namespaces: feeds.namespaces.subscribe_touched(),
                members: feeds.members.subscribe_touched(),
            },
            projects: feeds.projects.subscribe(),
            environments: environment::Inputs {
                environments: feeds.environments.subscribe(),
                projects: feeds.projects.subscribe_touched(),
            },
            credentials: ssh_credential::Inputs {
                credentials: feeds.credentials.subscribe(),
                secrets: feeds.secrets.subscribe_touched(),
                servers: feeds.servers.subscribe_touched(),
            },
            certificates: certificate::Inputs {
                certificates: feeds.certificates.subscribe(),
                bindings: feeds.domain_bindings.subscribe_touched(),
            },
            domain_bindings: domain_binding::Inputs {
                bindings: feeds.domain_bindings.subscribe(),
                certificates: feeds.certificates.subscribe_touched(),
            },
            members: bookkeeping::Shared::subscribe(&feeds.members),
            threshold_policies: bookkeeping::Shared::subscribe(&feeds.threshold_policies),
            retention_policies: bookkeeping::Shared::subscribe(&feeds.retention_policies),
            storage_volumes: storage_volume::Inputs {
                volumes: feeds.storage_volumes.subscribe(),
                resources: feeds.resources.subscribe_touched(),
            },
            previews: preview::Inputs {
                resources: feeds.resources.subscribe_touched(),
                deployments: feeds.deployments.subscribe(),
                domain_bindings: feeds.domain_bindings.subscribe_touched(),
            },
            retention: feeds.retention_policies.subscribe(),
            health_changes: feeds.resources.subscribe(),
            dependencies: wakes.dependencies,
        }
    }
}

/// Runs every controller until `shutdown` resolves. The shared watches start once every
/// controller has subscribed to the kinds it reacts to.
pub async fn run_all(
    context: Arc<Context>,
    feeds: Feeds,
    wakes: WakeReceivers,
    health_history: crate::health_history::Settings,
    retention: retention::Settings,
    shutdown: impl Future<Output = ()> + Clone + Send + Sync + 'static,
) {
    let inputs = Inputs::subscribe(&feeds, wakes);
    let controllers = async {
        context.caches.wait_until_ready().await;
        tracing::info!("caches filled; starting the controllers");
        run_controllers(context.clone(), inputs, health_history, retention, shutdown).await;
    };
    // The watches end with the process; the controllers end on shutdown.
    tokio::select! {
        _ = feeds.run(context.client.clone()) => {}
        _ = controllers => {}
    }
}

/// Every controller, each on its subscriptions (every one must be consumed, or its shared
/// watch waits); the kinds only bookkeeping watches have a watch of their own.
async fn run_controllers(
    context: Arc<Context>,
    inputs: Inputs,
    health_history: crate::health_history::Settings,
    retention: retention::Settings,
    shutdown: impl Future<Output = ()> + Clone + Send + Sync + 'static,
) {
    tokio::join!(
        organization::run(context.clone(), inputs.organizations, shutdown.clone()),
        project::run(context.clone(), inputs.projects, shutdown.clone()),
        environment::run(context.clone(), inputs.environments, shutdown.clone()),
        ssh_credential::run(context.clone(), inputs.credentials, shutdown.clone()),
        certificate::run(context.clone(), inputs.certificates, shutdown.clone()),
        domain_binding::run(context.clone(), inputs.domain_bindings, shutdown.clone()),
        server::run(context.clone(), inputs.servers, shutdown.clone()),
        deployment::run(context.clone(), inputs.deployments, shutdown.clone()),
        resource::run(context.clone(), inputs.resources, shutdown.clone()),
        dependency::run(context.clone(), inputs.dependencies, shutdown.clone()),
        scheduled_task::run(context.clone(), shutdown.clone()),
        preview::run(context.clone(), inputs.previews, shutdown.clone()),
        migration::run(context.clone(), shutdown.clone()),
        scheduled_task::run_runs(context.clone(), shutdown.clone()),
        backup::run(context.clone(), shutdown.clone()),
        backup::run_targets(context.clone(), shutdown.clone()),
        backup::run_restores(context.clone(), shutdown.clone()),
        backup::run_policies::<DependencyResourceBackupPolicy>(context.clone(), shutdown.clone()),
        backup::run_policies::<StorageVolumeBackupPolicy>(context.clone(), shutdown.clone()),
        backup::run_volume_backups(context.clone(), shutdown.clone()),
        backup::run_volume_restores(context.clone(), shutdown.clone()),
        notifications::run_notifier(context.clone(), shutdown.clone()),
        notifications::run_deliveries(context.clone(), shutdown.clone()),
        bookkeeping::run::<User>(context.clone(), shutdown.clone()),
        bookkeeping::run::<Session>(context.clone(), shutdown.clone()),
        bookkeeping::run::<Invitation>(context.clone(), shutdown.clone()),
        bookkeeping::run::<DeployToken>(context.clone(), shutdown.clone()),
        bookkeeping::run::<UsageIntent>(context.clone(), shutdown.clone()),
        bookkeeping::run::<OverlayDecision>(context.clone(), shutdown.clone()),
        bookkeeping::run::<RouteSurfaceDecision>(context.clone(), shutdown.clone()),
        bookkeeping::run::<PreviewPolicy>(context.clone(), shutdown.clone()),
        bookkeeping::run_shared(context.clone(), inputs.members, shutdown.clone()),
        bookkeeping::run_shared(context.clone(), inputs.threshold_policies, shutdown.clone()),
        bookkeeping::run_shared(context.clone(), inputs.retention_policies, shutdown.clone()),
        storage_volume::run(context.clone(), inputs.storage_volumes, shutdown.clone()),
        retention::run(
            context.clone(),
            inputs.retention,
            retention,
            shutdown.clone()
        ),
        crate::health_history::run(
            context.clone(),
            inputs.health_changes,
            health_history,
            shutdown.clone()
        ),
    );
}
