//! Leader election on a Lease: only the holder writes. Losing the Lease stops the process, so a
//! replica never keeps writing on stale authority.

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::context::Context;
use crate::options::RunOptions;
use berth_process::shutdown::Shutdown;

/// Name of the Lease in the system namespace.
pub const LEASE_NAME: &str = "berth-controller";

/// A held Lease. Dropping the receiver makes the lease task release it.
pub struct Leader {
    state: watch::Receiver<bool>,
    task: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
    context: std::sync::Arc<Context>,
}

/// Waits until this replica holds the Lease; `None` if shutdown came first.
pub async fn acquire(
    client: &Client,
    options: &RunOptions,
    identity: &str,
    context: &std::sync::Arc<Context>,
    shutdown: Shutdown,
) -> anyhow::Result<Option<Leader>> {
    let manager = LeaseManagerBuilder::new(client.clone(), LEASE_NAME)
        .with_namespace(&options.system.system_namespace)
        .with_identity(identity)
        .with_duration(options.lease_seconds)
        .with_grace((options.lease_seconds / 3).max(1))
        .build()
        .await?;
    let (mut state, task) = manager.watch().await;
    tracing::info!(%identity, lease = LEASE_NAME, "waiting for the leader Lease");
    let acquired = tokio::select! {
        result = state.wait_for(|leader| *leader) => result.is_ok(),
        _ = shutdown => false,
    };
    if !acquired {
        drop(state);
        let _ = task.await;
        return Ok(None);
    }
    context.metrics.leader.set(1);
    Ok(Some(Leader {
        state,
        task,
        context: context.clone(),
    }))
}

impl Leader {
    /// Resolves when the Lease is lost or its task dies, with a description of what happened.
    pub async fn lost(&self) -> String {
        let mut state = self.state.clone();
        match state.wait_for(|leader| !*leader).await {
            Ok(_) => "another replica holds it".into(),
            Err(_) => "the lease task stopped".into(),
        }
    }

    /// Gives the Lease up so a standby replica can take over at once.
    pub async fn release(self) {
        self.context.metrics.leader.set(0);
        drop(self.state);
        match self.task.await {
            Ok(Ok(_)) => tracing::info!("released the leader Lease"),
            Ok(Err(error)) => tracing::warn!(%error, "releasing the Lease failed"),
            Err(error) => tracing::warn!(%error, "lease task panicked"),
        }
    }
}
