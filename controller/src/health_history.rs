//! The health history (spec §2.2 "Health history"): every Resource's health record goes into the
//! observation store when what it says changes (overall verdict, runtime state, route, policy,
//! latest deployment) and again every [`Settings::interval`] while it does not, so a quiet
//! period shows as observations rather than a gap. Driven by the Resource watch the
//! reconcilers share: a status write by the server observer or a deploy is what changes the
//! record, and the periodic pass reads the in-memory caches only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use berth_crds::deployment::Deployment;
use berth_crds::health::{Inputs, ResourceHealth, build};
use berth_crds::notification::NotificationEvent;
use berth_crds::resource::Resource;
use berth_crds::server::Server;
use berth_observations::HealthObservation;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;

use crate::cache::Subscription;
use crate::context::Context;

/// How often an unchanged record is observed again (how long records are kept is the
/// `domain-event-streams` RetentionPolicy's).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub interval: Duration,
}

/// What makes two records "the same" for the history: the fields an observation lists.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Signature {
    overall: String,
    lifecycle: String,
    health: String,
    public_access: String,
    proxy: String,
    policy: String,
    deployment: Option<String>,
}

impl Signature {
    fn of(record: &ResourceHealth) -> Self {
        Self {
            overall: record.overall.clone(),
            lifecycle: record.runtime.lifecycle.clone(),
            health: record.runtime.health.clone(),
            public_access: record.public_access.status.clone(),
            proxy: record.proxy.status.clone(),
            policy: record.health_policy.status.clone(),
            deployment: record.latest_deployment.as_ref().map(|d| d.id.clone()),
        }
    }
}

/// The last observation recorded for one resource.
struct Recorded {
    signature: Signature,
    at_ms: i64,
    /// Whether the notifier was told it became unhealthy and not yet that it recovered.
    unhealthy_told: bool,
}

/// Records until `shutdown` resolves (or the watch ends, with the process).
pub async fn run(
    context: Arc<Context>,
    changes: Subscription<Resource>,
    settings: Settings,
    shutdown: impl Future<Output = ()>,
) {
    let mut recorder = Recorder {
        context,
        settings,
        recorded: HashMap::new(),
    };
    let mut periodic = tokio::time::interval(settings.interval);
    periodic.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut changes = std::pin::pin!(changes);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            changed = changes.next() => match changed {
                Some(resource) => recorder.observe(&[resource], false).await,
                None => return,
            },
            _ = periodic.tick() => recorder.sweep().await,
        }
    }
}

struct Recorder {
    context: Arc<Context>,
    settings: Settings,
    recorded: HashMap<ObjectRef<Resource>, Recorded>,
}

impl Recorder {
    /// Every cached resource whose last observation is older than the interval, and
    /// forgetting the ones that are gone.
    async fn sweep(&mut self) {
        let resources = self.context.caches.resources.state();
        let present: std::collections::HashSet<_> = resources
            .iter()
            .map(|r| ObjectRef::from_obj(&**r))
            .collect();
        self.recorded.retain(|key, _| present.contains(key));
        self.observe(&resources, true).await;
    }

    /// Records the resources whose record changed (or, `periodic`, is due again).
    async fn observe(&mut self, resources: &[Arc<Resource>], periodic: bool) {
        let now_ms = now_ms();
        let mut due = Vec::new();
        for resource in resources {
            if resource.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let record = self.record_of(resource);
            let signature = Signature::of(&record);
            let key = ObjectRef::from_obj(&**resource);
            let last = self.recorded.get(&key);
            if !is_due(last, &signature, now_ms, self.settings.interval, periodic) {
                continue;
            }
            due.push(observation(resource, &record, now_ms));
            let before = last.map(|l| (l.signature.overall.as_str(), l.unhealthy_told));
            let event = health_change(before, &signature.overall);
            if let Some(event) = event {
                notify(&self.context, resource, event, &signature);
            }
            let unhealthy_told = match event {
                Some(event) => event == NotificationEvent::ResourceUnhealthy,
                None => before.is_some_and(|(_, told)| told),
            };
            self.recorded.insert(
                key,
                Recorded {
                    signature,
                    at_ms: now_ms,
                    unhealthy_told,
                },
            );
        }
        if !due.is_empty() {
            self.context.observations.record_health(due).await;
        }
    }

    /// The record as `mode=cached` serves it, from the controller's caches.
    fn record_of(&self, resource: &Resource) -> ResourceHealth {
        let caches = &self.context.caches;
        let namespace = resource.namespace().unwrap_or_default();
        let latest: Option<Arc<Deployment>> = resource
            .status
            .as_ref()
            .and_then(|s| s.last_deployment_id.as_deref())
            .and_then(|name| {
                caches
                    .deployments
                    .get(&ObjectRef::new(name).within(&namespace))
            });
        let server: Option<Arc<Server>> = resource
            .spec
            .server_id
            .as_deref()
            .and_then(|name| caches.servers.get(&ObjectRef::new(name).within(&namespace)));
        build(&Inputs {
            resource,
            latest: latest.as_deref(),
            server: server.as_deref(),
            now: Time(Timestamp::now()).0.to_string(),
        })
    }
}

/// The notification a change of the overall verdict makes: becoming unhealthy, and healthy
/// again after being told so (whatever came between). `before` is the last verdict and
/// whether its unhealthiness was told; the first verdict after a start tells nothing new.
fn health_change(before: Option<(&str, bool)>, now: &str) -> Option<NotificationEvent> {
    let (was, told) = before?;
    match now {
        "unhealthy" if was != "unhealthy" => Some(NotificationEvent::ResourceUnhealthy),
        "healthy" if told => Some(NotificationEvent::ResourceRecovered),
        _ => None,
    }
}

fn notify(context: &Context, resource: &Resource, event: NotificationEvent, now: &Signature) {
    let name = resource.name_any();
    let summary = format!(
        "runtime {} and {}; public access {}; route {}",
        now.lifecycle, now.health, now.public_access, now.proxy
    );
    context.notify_about_resource(
        &resource.namespace().unwrap_or_default(),
        &name,
        event,
        crate::notices::subject("Resource", &name, Some(&resource.spec.name)),
        summary,
    );
}

/// Whether to record now: the first time, on any change, and periodically once the last
/// observation is an interval old. Resources never deployed are not observed periodically:
/// "not deployed" every few minutes tells nobody anything.
fn is_due(
    last: Option<&Recorded>,
    signature: &Signature,
    now_ms: i64,
    interval: Duration,
    periodic: bool,
) -> bool {
    let Some(last) = last else {
        return true;
    };
    if last.signature != *signature {
        return true;
    }
    let interval_ms = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
    periodic && signature.overall != "not-deployed" && now_ms - last.at_ms >= interval_ms
}

fn observation(resource: &Resource, record: &ResourceHealth, now_ms: i64) -> HealthObservation {
    HealthObservation {
        id: 0,
        namespace: resource.namespace().unwrap_or_default(),
        resource: resource.name_any(),
        observed_ms: now_ms,
        overall: record.overall.to_string(),
        summary: record.to_json(),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(overall: &'static str) -> Signature {
        Signature {
            overall: overall.into(),
            lifecycle: "running".into(),
            health: "healthy".into(),
            public_access: "ready".into(),
            proxy: "ready".into(),
            policy: "configured".into(),
            deployment: Some("dep-1".into()),
        }
    }

    #[test]
    fn becoming_unhealthy_and_healthy_again_are_told_once_each() {
        use NotificationEvent::{ResourceRecovered, ResourceUnhealthy};
        assert_eq!(health_change(None, "unhealthy"), None);
        let healthy = Some(("healthy", false));
        assert_eq!(health_change(healthy, "unhealthy"), Some(ResourceUnhealthy));
        assert_eq!(health_change(Some(("unhealthy", true)), "unhealthy"), None);
        assert_eq!(health_change(Some(("unhealthy", true)), "degraded"), None);
        // Unhealthy, then starting (degraded), then healthy: the recovery is told.
        assert_eq!(
            health_change(Some(("degraded", true)), "healthy"),
            Some(ResourceRecovered)
        );
        assert_eq!(health_change(Some(("degraded", false)), "healthy"), None);
    }

    #[test]
    fn a_change_is_recorded_at_once_and_sameness_only_periodically() {
        let minute = Duration::from_secs(60);
        let last = Recorded {
            signature: signature("healthy"),
            at_ms: 0,
            unhealthy_told: false,
        };
        assert!(is_due(None, &signature("healthy"), 0, minute, false));
        assert!(is_due(
            Some(&last),
            &signature("unhealthy"),
            1,
            minute,
            false
        ));
        let mut moved = signature("healthy");
        moved.deployment = Some("dep-2".into());
        assert!(is_due(Some(&last), &moved, 1, minute, false));
        assert!(!is_due(
            Some(&last),
            &signature("healthy"),
            60_000,
            minute,
            false
        ));
        assert!(!is_due(
            Some(&last),
            &signature("healthy"),
            59_999,
            minute,
            true
        ));
        assert!(is_due(
            Some(&last),
            &signature("healthy"),
            60_000,
            minute,
            true
        ));
        let never = Recorded {
            signature: signature("not-deployed"),
            at_ms: 0,
            unhealthy_told: false,
        };
        assert!(!is_due(
            Some(&never),
            &signature("not-deployed"),
            120_000,
            minute,
            true
        ));
    }
}
