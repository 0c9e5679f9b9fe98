//! State shared by every reconciler.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use berth_crds::notification::{NotificationEvent, Subject};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::attempt_supervisor::Attempts;
use crate::cache::Caches;
use crate::holds::Holds;
use crate::metrics::Metrics;
use crate::notices::{Notice, Notices};
use crate::observer::Observers;
use berth_observations::ObservationWriter;
use berth_remote::{PoolSettings, ServerConnectionPool};
use berth_source::SourceCache;

// Unit tests' context on a scripted API server (`Context::test`).
#[cfg(test)]
pub mod api_server;
#[cfg(test)]
pub mod fixtures;

/// Field manager of every write the controller makes (server-side apply).
pub const FIELD_MANAGER: &str = "berth-controller";

/// Shared by all reconcilers through an `Arc`.
pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub metrics: Metrics,
    /// The SSH connections to servers, one per server, shared by every reconciler.
    pub servers: ServerConnectionPool,
    /// Set once the CRDs are established and the controllers run.
    pub ready: AtomicBool,
    /// The observation store: attempts' timelines, health history, monitoring samples and
    /// access failures are recorded through it.
    pub observations: ObservationWriter,
    /// What reconcilers read instead of asking the API server.
    pub caches: Caches,
    /// One observer per server: what runs where, and who to wake when it changes.
    pub observers: Observers,
    /// The deployment attempts running now, one task each.
    pub attempts: Attempts,
    /// Containers stopped on purpose for a while (a volume restored in place or quiesced for
    /// a backup): drift repair leaves them.
    pub holds: Holds,
    /// Where certificates come from and how host names are checked (DESIGN §5b).
    pub acme: AcmeSettings,
    /// The controller's copies of the git repositories it deploys (DESIGN §5a').
    pub sources: SourceCache,
    /// Where reconcilers hand what a person should hear of (the notifier takes it from here).
    pub notices: Notices,
    /// The image of the containers that read and write storage volumes' files (`docker cp`
    /// through a created, never started, container; a restore in place also runs its `sh`).
    pub volume_helper_image: String,
    /// Where the steps of Migrations written with kubectl run (berth-shim), and their retries.
    pub migrations: crate::migration_steps::Shim,
}

/// What the controller reaches beyond the cluster and its servers: the ACME CA, git sources,
/// and the notifier's queue with the console's address for its links.
pub struct Integrations {
    pub acme: AcmeSettings,
    pub sources: SourceCache,
    pub notices: Notices,
    pub volume_helper_image: String,
    pub migrations: crate::migration_steps::Shim,
}

/// The ACME CA Berth orders certificates from, and the resolver its pre-flight check uses.
#[derive(Clone, Debug)]
pub struct AcmeSettings {
    /// The CA's directory URL.
    pub directory_url: String,
    /// A PEM root to trust for the directory's HTTPS (a test CA such as Pebble); the system's
    /// roots when `None`.
    pub directory_ca: Option<std::path::PathBuf>,
    /// The DNS server the CA resolves with (a test DNS); the system resolver when `None`.
    pub dns_server: Option<std::net::SocketAddr>,
}

impl Default for AcmeSettings {
    fn default() -> Self {
        Self {
            directory_url: "https://acme-v02.api.letsencrypt.org/directory".into(),
            directory_ca: None,
            dns_server: None,
        }
    }
}

impl Context {
    pub fn new(
        client: Client,
        metrics: Metrics,
        observations: ObservationWriter,
        caches: Caches,
        observers: Observers,
        integrations: Integrations,
    ) -> Arc<Self> {
        let Integrations {
            acme,
            sources,
            notices,
            volume_helper_image,
            migrations,
        } = integrations;
        let reporter = Reporter {
            controller: FIELD_MANAGER.into(),
            instance: std::env::var("HOSTNAME").ok(),
        };
        Arc::new(Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            metrics,
            servers: ServerConnectionPool::new(PoolSettings::default()),
            ready: AtomicBool::new(false),
            observations,
            caches,
            observers,
            attempts: Attempts::default(),
            holds: Holds::default(),
            acme,
            sources,
            notices,
            volume_helper_image,
            migrations,
        })
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Publishes a Kubernetes Event; a failure is logged, never fatal, since events are advisory.
    pub async fn publish_event(
        &self,
        reference: &ObjectReference,
        type_: EventType,
        reason: &str,
        note: String,
    ) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Reconcile".into(),
            secondary: None,
        };
        // Kubernetes 1.20 treats every custom kind as namespaced when validating events, so an
        // event about a cluster-scoped object (Organization, User) is filed under `default`.
        let mut reference = reference.clone();
        reference.namespace.get_or_insert_with(|| "default".into());
        match self.recorder.publish(&event, &reference).await {
            Ok(()) => {}
            // The object's namespace is going away with everything in it: nobody will read it.
            Err(kube::Error::Api(status)) if status.message.contains("being terminated") => {
                tracing::debug!(reason, "no event: the namespace is being deleted");
            }
            Err(error) => tracing::warn!(%error, reason, "could not publish event"),
        }
    }

    /// Hands the notifier `event` about `subject`, an object of resource `resource_id` (or the
    /// resource itself) in `namespace`; the project is read from the cache.
    pub fn notify_about_resource(
        &self,
        namespace: &str,
        resource_id: &str,
        event: NotificationEvent,
        subject: Subject,
        summary: String,
    ) {
        let resource = Caches::get(&self.caches.resources, namespace, resource_id);
        self.notices.send(Notice {
            namespace: namespace.to_string(),
            event,
            subject,
            project_id: resource.map(|r| r.spec.project_id.clone()),
            resource_id: Some(resource_id.to_string()),
            summary,
            occurred_at: Timestamp::now(),
        });
    }
}
