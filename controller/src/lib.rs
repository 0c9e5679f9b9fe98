//! Berth's controller: reconcilers that converge Berth's custom resources.
#![forbid(unsafe_code)]

pub mod api_requests;
pub mod attempt_supervisor;
pub mod cache;
pub mod conditions;
pub mod context;
pub mod disruption_budgets;
pub mod error;
pub mod health_history;
pub mod holds;
pub mod leadership;
pub mod liveness;
pub mod metrics;
pub mod migration_steps;
pub mod notices;
pub mod observer;
pub mod observer_tasks;
pub mod options;
pub mod reconcilers;
pub mod routes;
pub mod server_connections;
pub mod startup;
pub mod status;

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};

use crate::context::{Context, FIELD_MANAGER};
use crate::metrics::Metrics;
use crate::options::RunOptions;

/// Runs the controller until SIGTERM/SIGINT, or until this replica loses its Lease.
pub async fn run(options: RunOptions) -> anyhow::Result<()> {
    let client = api_requests::counted_client().await?;
    let observations = open_observations(&options).await?;
    let (caches, feeds) = cache::Caches::new();
    let (observers, wakes) = observer::Observers::new(options.monitoring());
    let context = Context::new(
        client.clone(),
        Metrics::default(),
        observations,
        caches,
        observers,
        context::Integrations {
            acme: options.acme(),
            sources: options.sources(),
            notices: notices::Notices::new(options.console_url.clone()),
            volume_helper_image: options.volume_helper_image.clone(),
            migrations: options.migration_runner(),
        },
    );
    let shutdown = berth_process::shutdown::on_signal();

    let server = tokio::spawn(liveness::serve(
        options.listen,
        context.clone(),
        shutdown.clone(),
    ));

    startup::wait_for_crds(&client, Duration::from_secs(options.crd_wait_seconds)).await?;
    let system_namespace = &options.system.system_namespace;
    ensure_system_namespace(&client, system_namespace).await?;
    let seeds = options.retention_seeds();
    reconcilers::retention_seeds::ensure_system_defaults(&client, system_namespace, &seeds).await?;
    if let Some(namespace) = options.disruption_budgets_in.clone() {
        tokio::spawn(disruption_budgets::keep_applying(client.clone(), namespace));
    }

    // Ready means able to lead, not leading: a standby replica must count as available, or a
    // rolling update and a PodDisruptionBudget wait forever for the leader to go first.
    // Who leads is the Lease, and the `berth_leader` gauge.
    context.set_ready(true);
    let identity = options.identity.clone().unwrap_or_else(default_identity);
    let Some(leader) =
        leadership::acquire(&client, &options, &identity, &context, shutdown.clone()).await?
    else {
        tracing::info!("shut down before becoming leader");
        return Ok(());
    };

    tracing::info!(%identity, "leader; starting reconcilers");
    let outcome = tokio::select! {
        _ = reconcilers::run_all(
            context.clone(),
            feeds,
            wakes,
            options.health_history(),
            options.retention(),
            shutdown.clone(),
        ) => Ok(()),
        lost = leader.lost() => Err(anyhow::anyhow!("lost the leader Lease: {lost}")),
    };
    context.set_ready(false);
    // Running attempts stop, unfinished, for the next leader; once the Lease is gone they
    // write nothing more.
    let grace = match outcome {
        Ok(()) => attempt_supervisor::SETTLE_ON_SHUTDOWN,
        Err(_) => Duration::ZERO,
    };
    context.attempts.shut_down(grace).await;
    leader.release().await;
    server.abort();
    tracing::info!("stopped");
    outcome
}

/// Opens the observation store and starts its writer (RetentionPolicies prune it).
async fn open_observations(
    options: &RunOptions,
) -> anyhow::Result<berth_observations::ObservationWriter> {
    let location = options.store.location();
    // Shown masked: a URL's password never reaches a log line.
    let shown = location.to_string();
    let store = tokio::task::spawn_blocking(move || berth_observations::open(&location)).await??;
    tracing::info!(store = %shown, "observation store open");
    Ok(berth_observations::ObservationWriter::start(store)?)
}

/// Creates the system namespace (leases, sessions, system policies) if missing.
async fn ensure_system_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([(berth_crds::MANAGED_LABEL.to_string(), "true".to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER),
            &Patch::Apply(&namespace),
        )
        .await?;
    Ok(())
}

fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|| "berth".into());
    format!("{host}-{}", std::process::id())
}
