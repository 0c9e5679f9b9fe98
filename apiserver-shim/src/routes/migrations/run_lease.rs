//! Who runs a Migration applied over REST now. Every run (apply or cleanup) holds a lease written on the Migration itself for its whole length —
//! the annotations `berth.dev/run-holder` (the shim process) and `berth.dev/run-renewed` — so
//! two shim replicas never run the same task at once and never write over each other's
//! receipts. Taking it is a write conditioned on the object's `resourceVersion`; renewing and
//! giving it up are JSON patches that first test the holder, so only one writer can win. A
//! second caller is told `migration_in_progress`. The holder renews it every [`RENEW_EVERY`]; a
//! replica that dies stops renewing, and another takes over after [`LEASE_SECONDS`]. (On the
//! object rather than a coordination Lease: the shim must not be able to write Leases, or it
//! could take the controller's leadership.) Tasks written with kubectl need none: only
//! berth-controller's leader runs them, a step per call (`runner`).
//!
//! Within one process, [`RunGuard`] answers at once, without asking the API server.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use berth_crds::migration::Migration;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// How long a lease outlives a holder that stopped renewing it.
const LEASE_SECONDS: u64 = 30;
/// How often the holder renews it.
const RENEW_EVERY: Duration = Duration::from_secs(10);
const HOLDER: &str = "berth.dev/run-holder";
const RENEWED: &str = "berth.dev/run-renewed";
/// The annotations' paths in a JSON patch (`/` written `~1`).
const HOLDER_PATH: &str = "/metadata/annotations/berth.dev~1run-holder";
const RENEWED_PATH: &str = "/metadata/annotations/berth.dev~1run-renewed";

/// This process, as a Lease holder: its host (the pod's name in a cluster) and a random part.
static IDENTITY: LazyLock<String> = LazyLock::new(|| {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "berth-shim".into());
    let random = crate::token::generate("");
    format!("{host}-{}", &random[..8])
});

/// Migrations with a run in this process: a second one waits its turn.
static RUNNING: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn in_progress(name: &str, where_: &str) -> ApiError {
    ApiError::conflict_code(
        "migration_in_progress",
        format!("migration {name} is being applied or cleaned up {where_}; repeat when it ends"),
    )
    .retriable()
}

/// A run of the named Migration in this process.
pub struct RunGuard(String);

impl RunGuard {
    pub fn take(name: &str) -> ApiResult<Self> {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        if !running.get_or_insert_default().insert(name.to_string()) {
            return Err(in_progress(name, "by this replica"));
        }
        Ok(Self(name.to_string()))
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        running.get_or_insert_default().remove(&self.0);
    }
}

/// A Migration's lease, held and renewed until [`release`](Self::release) (or until the
/// process ends: then it expires).
pub struct RunLease {
    api: Api<Migration>,
    name: String,
    renewing: JoinHandle<()>,
}

impl RunLease {
    /// Takes `migration`'s lease and answers the task as it is now (another replica may have
    /// moved it on before the lease was free); `migration_in_progress` while another holds it.
    pub async fn take(state: &AppState, migration: &Migration) -> ApiResult<(Self, Migration)> {
        let namespace = migration.namespace().unwrap_or_default();
        let name = migration.name_any();
        let api = Api::<Migration>::namespaced(state.client.clone(), &namespace);
        let current = api.get(&name).await?;
        if held_elsewhere(&current, Timestamp::now()) {
            return Err(in_progress(&name, "by another replica"));
        }
        let take = json!({"metadata": {
            "resourceVersion": current.resource_version(),
            "annotations": {HOLDER: IDENTITY.as_str(), RENEWED: Timestamp::now().to_string()},
        }});
        let taken = match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&take))
            .await
        {
            Ok(taken) => taken,
            // Written meanwhile (perhaps taken): the caller repeats.
            Err(kube::Error::Api(status)) if status.code == 409 => {
                return Err(in_progress(&name, "by another replica"));
            }
            Err(error) => return Err(error.into()),
        };
        let renewing = tokio::spawn(renew(api.clone(), name.clone()));
        Ok((
            Self {
                api,
                name,
                renewing,
            },
            taken,
        ))
    }

    /// Gives the lease up, so the next run anywhere starts at once.
    pub async fn release(self) {
        self.renewing.abort();
        let give_up = json!([
            {"op": "test", "path": HOLDER_PATH, "value": IDENTITY.as_str()},
            {"op": "remove", "path": HOLDER_PATH},
            {"op": "remove", "path": RENEWED_PATH},
        ]);
        if let Err(error) = self.patch(&give_up).await {
            tracing::warn!(%error, migration = %self.name, "giving up a migration's lease");
        }
    }

    async fn patch(&self, operations: &serde_json::Value) -> kube::Result<Migration> {
        patch_json(&self.api, &self.name, operations).await
    }
}

impl Drop for RunLease {
    /// A run dropped without [`release`](RunLease::release) (its caller went away) stops
    /// renewing: the lease expires.
    fn drop(&mut self) {
        self.renewing.abort();
    }
}

async fn patch_json(
    api: &Api<Migration>,
    name: &str,
    operations: &serde_json::Value,
) -> kube::Result<Migration> {
    let patch: json_patch::Patch =
        serde_json::from_value(operations.clone()).map_err(kube::Error::SerdeError)?;
    api.patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
}

/// Renews the lease while it is ours; stops when it is not (a test of the holder fails).
async fn renew(api: Api<Migration>, name: String) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let renewal = json!([
            {"op": "test", "path": HOLDER_PATH, "value": IDENTITY.as_str()},
            {"op": "replace", "path": RENEWED_PATH, "value": Timestamp::now().to_string()},
        ]);
        if let Err(error) = patch_json(&api, &name, &renewal).await {
            tracing::warn!(%error, migration = %name, "renewing a migration's lease");
            return;
        }
    }
}

/// Whether another process holds the lease and renewed it within [`LEASE_SECONDS`].
fn held_elsewhere(migration: &Migration, now: Timestamp) -> bool {
    let annotations = migration.annotations();
    let Some(holder) = annotations.get(HOLDER) else {
        return false;
    };
    let renewed = annotations
        .get(RENEWED)
        .and_then(|at| at.parse::<Timestamp>().ok());
    let fresh = renewed.is_some_and(|at| at + Duration::from_secs(LEASE_SECONDS) > now);
    holder != IDENTITY.as_str() && fresh
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::migration::MigrationSpec;

    fn free() -> Migration {
        let digest = format!("sha256:{}", "a".repeat(64));
        let plan = json!({
            "protocol": "platform-migration/v1", "state": "ready", "bundleDigest": digest,
            "planDigest": digest, "steps": [], "blockers": [], "warnings": [],
        });
        let spec: MigrationSpec =
            serde_json::from_value(json!({"plan": plan, "digest": digest})).unwrap();
        Migration::new("mig-a", spec)
    }

    fn held(holder: &str, renewed: Timestamp) -> Migration {
        let mut migration = free();
        let annotations = migration.annotations_mut();
        annotations.insert(HOLDER.into(), holder.into());
        annotations.insert(RENEWED.into(), renewed.to_string());
        migration
    }

    #[test]
    fn a_lease_renewed_by_another_process_is_held_until_it_expires() {
        let now = Timestamp::now();
        let recent = now - Duration::from_secs(5);
        assert!(held_elsewhere(&held("other-1", recent), now));
        assert!(
            !held_elsewhere(&held(IDENTITY.as_str(), recent), now),
            "ours"
        );
        let stale = now - Duration::from_secs(LEASE_SECONDS + 1);
        assert!(!held_elsewhere(&held("other-1", stale), now), "expired");
        assert!(!held_elsewhere(&free(), now));
    }
}
