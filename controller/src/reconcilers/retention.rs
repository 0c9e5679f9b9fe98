//! Retention policies at work (spec §2.2 "Retention default policy"): each enabled
//! RetentionPolicy with a scheduling flag runs over the observation store when it changes and
//! then on a cadence. `dryRunSchedulingEnabled` alone counts what a run would delete;
//! `destructiveSchedulingEnabled` deletes it. A system policy (in the system namespace) covers
//! every organization without an enabled policy of its own for the category. What a run did is
//! `status.lastRun` and a Kubernetes Event.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use berth_crds::organization::Organization;
use berth_crds::retention_policy::{
    RetentionCategory, RetentionPolicy, RetentionPolicySpec, RetentionRun, RetentionRunMode,
    RetentionScope,
};
use berth_observations::{History, RetentionStore};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::reflector::Store;
use kube::{Api, Resource, ResourceExt};

use super::policy::{drain, error_policy};
use crate::cache::Subscription;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::event_reason;

const KIND: &str = "RetentionPolicy";
/// Field manager of `status.lastRun`, apart from the bookkeeping of the kind's conditions.
const MANAGER: &str = "berth-retention";
const DAY_MS: i64 = 24 * 3600 * 1000;

/// How often policies run, and where system policies live.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Between two runs of one policy (a change runs it at once).
    pub interval: Duration,
    pub system_namespace: String,
}

/// What every run needs besides the policy.
struct Runner {
    context: Arc<Context>,
    policies: Store<RetentionPolicy>,
    interval: Duration,
    system_namespace: String,
    /// The last run of each policy (by uid) made here: the cache can still hold the status
    /// from before it when the next reconcile reads it, and a second run would overwrite what
    /// the first deleted with nothing.
    recent: std::sync::Mutex<std::collections::HashMap<String, RetentionRun>>,
}

impl Runner {
    fn remembered(&self, policy: &RetentionPolicy) -> Option<RetentionRun> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.get(&policy.uid()?).cloned()
    }

    fn remember(&self, policy: &RetentionPolicy, run: &RetentionRun) {
        if let Some(uid) = policy.uid() {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            recent.insert(uid, run.clone());
        }
    }
}

pub async fn run(
    context: Arc<Context>,
    policies: Subscription<RetentionPolicy>,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let store = context.caches.retention_policies.clone();
    let controller = Controller::for_shared_stream(policies, store.clone());
    let runner = Arc::new(Runner {
        policies: store,
        context,
        interval: settings.interval,
        system_namespace: settings.system_namespace,
        recent: Default::default(),
    });
    let policy = error_policy::<RetentionPolicy>(KIND);
    let stream = controller.graceful_shutdown_on(shutdown).run(
        reconcile,
        move |object, error, runner: Arc<Runner>| policy(object, error, runner.context.clone()),
        runner,
    );
    drain(KIND, stream).await;
}

/// The kinds of history the store keeps in each category. Berth keeps no provider job logs or
/// log archives apart from these: crash evidence and log tails are events of the deployment
/// timelines (`process-attempts`).
pub fn histories(category: RetentionCategory) -> &'static [History] {
    match category {
        RetentionCategory::RuntimeMonitoringSamples => &[History::MonitoringSamples],
        RetentionCategory::ProcessAttempts => &[History::DeploymentTimelines],
        RetentionCategory::DomainEventStreams => {
            &[History::HealthHistory, History::AccessFailureEvidence]
        }
        RetentionCategory::AuditRows => &[History::AuditRecords],
        RetentionCategory::ProviderJobLogs | RetentionCategory::ResourceRuntimeLogArchives => &[],
    }
}

/// What a policy's flags ask for; `None`: configuration only.
pub fn mode_of(spec: &RetentionPolicySpec) -> Option<RetentionRunMode> {
    if !spec.enabled {
        None
    } else if spec.destructive_scheduling_enabled {
        Some(RetentionRunMode::Destructive)
    } else if spec.dry_run_scheduling_enabled {
        Some(RetentionRunMode::DryRun)
    } else {
        None
    }
}

async fn reconcile(policy: Arc<RetentionPolicy>, runner: Arc<Runner>) -> Result<Action> {
    let context = &runner.context;
    let _timer = context.metrics.reconcile_started(KIND);
    let Some(mode) = mode_of(&policy.spec) else {
        return Ok(Action::await_change());
    };
    if policy.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // The run's own status write (and any other) comes back as a change: not a reason to run.
    let remembered = runner.remembered(&policy);
    let now = Timestamp::now();
    if let Some(wait) = next_run_in(&policy, remembered.as_ref(), runner.interval, now) {
        return Ok(Action::requeue(wait));
    }
    let Some(store) = context.observations.store() else {
        return Ok(Action::await_change());
    };
    let namespaces = governed_namespaces(&policy, &runner);
    let cutoff_ms = Timestamp::now().as_millisecond() - policy.spec.retention_days * DAY_MS;
    let category = policy.spec.category;
    let work = namespaces.clone();
    let counted = tokio::task::spawn_blocking(move || {
        apply(store.as_ref(), &work, category, cutoff_ms, mode)
    })
    .await
    .map_err(|e| Error::ObservationStore(e.to_string()))?
    .map_err(|e| Error::ObservationStore(e.to_string()))?;
    let run = RetentionRun {
        at: Time(Timestamp::now()),
        generation: policy.metadata.generation,
        mode,
        cutoff: Time(Timestamp::from_millisecond(cutoff_ms).unwrap_or(Timestamp::UNIX_EPOCH)),
        deleted_rows: match mode {
            RetentionRunMode::Destructive => counted.values().sum(),
            RetentionRunMode::DryRun => 0,
        },
        matched_rows: counted,
        message: message(category, &namespaces),
        namespaces,
    };
    record(context, &policy, &run).await?;
    runner.remember(&policy, &run);
    Ok(Action::requeue(runner.interval))
}

/// How long until the policy's next run; `None`: due now (never run, its spec changed since,
/// or the interval has passed). The last run is the newer of the status's and `remembered`.
fn next_run_in(
    policy: &RetentionPolicy,
    remembered: Option<&RetentionRun>,
    interval: Duration,
    now: Timestamp,
) -> Option<Duration> {
    let recorded = policy.status.as_ref().and_then(|s| s.last_run.as_ref());
    let last = [recorded, remembered]
        .into_iter()
        .flatten()
        .max_by_key(|run| run.at.0)?;
    if last.generation != policy.metadata.generation {
        return None;
    }
    let elapsed = now.duration_since(last.at.0).unsigned_abs();
    interval.checked_sub(elapsed).filter(|left| !left.is_zero())
}

/// The organization namespaces a policy covers: its own; or, for a system policy, every
/// organization's without an enabled policy of its own for the category.
fn governed_namespaces(policy: &RetentionPolicy, runner: &Runner) -> Vec<String> {
    let namespace = policy.namespace().unwrap_or_default();
    let system = namespace == runner.system_namespace;
    if !system {
        return vec![namespace];
    }
    let category = policy.spec.category;
    let own_policy = |ns: &str| {
        runner.policies.state().iter().any(|p| {
            p.namespace().as_deref() == Some(ns)
                && p.spec.category == category
                && p.spec.enabled
                && p.spec.scope == RetentionScope::Organization
        })
    };
    let mut namespaces: Vec<String> = runner
        .context
        .caches
        .organizations
        .state()
        .iter()
        .map(|o| Organization::namespace_name(&o.name_any()))
        .filter(|ns| !own_policy(ns))
        .collect();
    namespaces.sort();
    namespaces
}

/// Counts (dry run) or deletes (destructive) each history of the category in each namespace;
/// rows per history.
fn apply(
    store: &dyn RetentionStore,
    namespaces: &[String],
    category: RetentionCategory,
    cutoff_ms: i64,
    mode: RetentionRunMode,
) -> std::result::Result<BTreeMap<String, i64>, berth_observations::StoreError> {
    let mut rows = BTreeMap::new();
    for history in histories(category) {
        let mut total = 0u64;
        for namespace in namespaces {
            total += match mode {
                RetentionRunMode::DryRun => store.count_before(namespace, *history, cutoff_ms)?,
                RetentionRunMode::Destructive => {
                    store.delete_before(namespace, *history, cutoff_ms)?
                }
            };
        }
        rows.insert(history.as_str().to_string(), total as i64);
    }
    Ok(rows)
}

fn message(category: RetentionCategory, namespaces: &[String]) -> Option<String> {
    if histories(category).is_empty() {
        Some(format!(
            "Berth keeps no separate {}: nothing to prune",
            category.as_str()
        ))
    } else if namespaces.is_empty() {
        Some("no organization is governed by this policy".into())
    } else {
        None
    }
}

/// Writes the run into `status.lastRun` and publishes it as an Event.
async fn record(context: &Context, policy: &RetentionPolicy, run: &RetentionRun) -> Result<()> {
    let namespace = policy.namespace().unwrap_or_default();
    let api = Api::<RetentionPolicy>::namespaced(context.client.clone(), &namespace);
    let params = PatchParams {
        field_manager: Some(MANAGER.into()),
        ..PatchParams::default()
    };
    let patch = serde_json::json!({ "status": { "lastRun": run } });
    api.patch_status(&policy.name_any(), &params, &Patch::Merge(&patch))
        .await?;
    let rows: i64 = run.matched_rows.values().sum();
    let (reason, note) = match run.mode {
        RetentionRunMode::DryRun => (
            event_reason::RETENTION_DRY_RUN,
            format!(
                "dry run: {rows} rows recorded before {} would be deleted",
                run.cutoff.0
            ),
        ),
        RetentionRunMode::Destructive => (
            event_reason::RETENTION_PRUNED,
            format!(
                "deleted {} rows recorded before {}",
                run.deleted_rows, run.cutoff.0
            ),
        ),
    };
    context
        .publish_event(&policy.object_ref(&()), EventType::Normal, reason, note)
        .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(enabled: bool, dry_run: bool, destructive: bool) -> RetentionPolicySpec {
        RetentionPolicySpec {
            scope: RetentionScope::Organization,
            organization_id: None,
            category: RetentionCategory::ProcessAttempts,
            retention_days: 1,
            dry_run_scheduling_enabled: dry_run,
            destructive_scheduling_enabled: destructive,
            enabled,
        }
    }

    #[test]
    fn only_the_destructive_flag_deletes_and_a_disabled_policy_does_nothing() {
        assert_eq!(mode_of(&spec(true, false, false)), None);
        assert_eq!(
            mode_of(&spec(true, true, false)),
            Some(RetentionRunMode::DryRun)
        );
        assert_eq!(
            mode_of(&spec(true, true, true)),
            Some(RetentionRunMode::Destructive)
        );
        assert_eq!(
            mode_of(&spec(true, false, true)),
            Some(RetentionRunMode::Destructive)
        );
        assert_eq!(mode_of(&spec(false, true, true)), None);
    }

    #[test]
    fn a_policy_runs_again_after_the_interval_or_once_its_spec_changed() {
        let at: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let mut policy = RetentionPolicy::new("process-attempts", spec(true, true, false));
        policy.metadata.generation = Some(2);
        let interval = Duration::from_secs(60);
        assert_eq!(next_run_in(&policy, None, interval, at), None, "never ran");
        let run = RetentionRun {
            at: Time(at),
            generation: Some(2),
            mode: RetentionRunMode::DryRun,
            cutoff: Time(at),
            matched_rows: BTreeMap::new(),
            deleted_rows: 0,
            namespaces: Vec::new(),
            message: None,
        };
        policy.status = Some(berth_crds::retention_policy::RetentionPolicyStatus {
            last_run: Some(run),
            ..Default::default()
        });
        let later = |seconds| at + std::time::Duration::from_secs(seconds);
        assert_eq!(
            next_run_in(&policy, None, interval, later(20)),
            Some(Duration::from_secs(40))
        );
        assert_eq!(next_run_in(&policy, None, interval, later(60)), None);
        policy.metadata.generation = Some(3);
        assert_eq!(
            next_run_in(&policy, None, interval, later(20)),
            None,
            "spec changed"
        );
        // A run of the new spec made here, while the cache still shows the older one.
        let mut made_here = policy.status.as_ref().unwrap().last_run.clone().unwrap();
        made_here.generation = Some(3);
        made_here.at = Time(later(10));
        assert_eq!(
            next_run_in(&policy, Some(&made_here), interval, later(20)),
            Some(Duration::from_secs(50)),
            "not run twice"
        );
    }

    #[test]
    fn every_category_names_what_it_prunes() {
        for category in RetentionCategory::ALL {
            let kept = !histories(category).is_empty();
            assert_eq!(message(category, &["org-a".into()]).is_none(), kept);
        }
    }
}
