//! What runs on one server, as its Docker reports it: Berth's containers and their state,
//! kept from one listing plus the events after it. Pure, so the rules are unit-tested.

use std::collections::{BTreeSet, HashMap};

use berth_crds::{
    DEPENDENCY_LABEL, DEPLOYMENT_LABEL, MANAGED_LABEL, NAMESPACE_LABEL, RESOURCE_LABEL,
    SIDECAR_LABEL,
};

use berth_remote::edge_proxy::{COMPONENT_LABEL, SERVER_LABEL};

/// A managed container as last observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerRecord {
    /// Docker's container id (the monitoring collector finds its cgroup by it).
    pub id: String,
    pub name: String,
    /// `Some` for application containers: the Resource and the attempt that started it.
    pub owner: Option<Owner>,
    /// The edge proxy of the Server named `namespace/name`.
    pub proxy_of: Option<String>,
    /// The managed dependency (namespace, DependencyResource) the container runs.
    pub dependency: Option<(String, String)>,
    pub running: bool,
    /// Exit code of the last time it stopped.
    pub exit_code: Option<i64>,
    /// Whether the kernel killed it for memory since it last started.
    pub oom_killed: bool,
    /// Docker's health status (`healthy`, `unhealthy`, `starting`) when it has a health check.
    pub health: Option<String>,
    /// How often it stopped while observed: a container Docker's restart policy started again
    /// at once shows as running, and only this tells that it crashed in between.
    pub deaths: u64,
    /// Whether the kernel had killed it for memory when it last stopped.
    pub died_oom: bool,
    /// Whether Docker was asked to stop or kill it since it last started (`docker stop`, a
    /// runtime-control stop or restart): that stop is no crash and not counted in `deaths`.
    pub stop_requested: bool,
}

/// The Resource (and attempt) a container belongs to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner {
    pub namespace: String,
    pub resource: String,
    pub deployment: String,
    /// A Compose stack's long-lived service, which outlives the attempt that started it.
    pub sidecar: bool,
}

/// A container as one listing shows it.
#[derive(Clone, Debug)]
pub struct Listed {
    pub id: String,
    pub name: String,
    pub labels: HashMap<String, String>,
    pub running: bool,
    /// Docker's health status as the listing's status line shows it (`Up 3 minutes
    /// (healthy)`): health events come only on a change, so a new listing must carry it.
    pub health: Option<String>,
}

/// One Docker container event.
#[derive(Clone, Debug)]
pub struct ContainerEvent {
    /// The container's id.
    pub id: String,
    pub action: String,
    /// Docker puts the container's name and labels here, plus e.g. `exitCode` on `die`.
    pub attributes: HashMap<String, String>,
}

/// What changed in the index: the Resources and dependencies whose containers changed, and
/// whether the edge
/// proxy (re)started (a started proxy holds only its base configuration, no routes) or stopped
/// (the Server reconciler starts it again).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub resources: BTreeSet<(String, String)>,
    pub dependencies: BTreeSet<(String, String)>,
    pub proxy_started: bool,
    pub proxy_stopped: bool,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
            && self.dependencies.is_empty()
            && !self.proxy_started
            && !self.proxy_stopped
    }
}

/// Berth's containers on one server, by name.
#[derive(Debug, Default)]
pub struct ServerIndex {
    containers: HashMap<String, ContainerRecord>,
    /// Counts proxy starts seen, so a reader can tell whether its routes were written since.
    proxy_starts: u64,
}

impl ServerIndex {
    pub fn container(&self, name: &str) -> Option<&ContainerRecord> {
        self.containers.get(name)
    }

    pub fn containers(&self) -> impl Iterator<Item = &ContainerRecord> {
        self.containers.values()
    }

    pub fn proxy_starts(&self) -> u64 {
        self.proxy_starts
    }

    /// Replaces everything with a fresh listing.
    pub fn replace(&mut self, listed: Vec<Listed>) -> Changes {
        let mut changes = Changes::default();
        let mut fresh = HashMap::new();
        for container in listed {
            let mut record = record_from_labels(&container.id, &container.name, &container.labels);
            record.running = container.running;
            record.health = container.health;
            if let Some(before) = self.containers.get(&record.name) {
                record.exit_code = before.exit_code;
                record.oom_killed = before.oom_killed;
                record.health = record.health.or_else(|| before.health.clone());
                record.deaths = before.deaths;
                record.died_oom = before.died_oom;
                record.stop_requested = before.stop_requested;
            }
            fresh.insert(record.name.clone(), record);
        }
        for (name, record) in &fresh {
            let before = self.containers.get(name);
            let seen = before.map(|b| (b.running, b.health.as_deref()));
            if seen != Some((record.running, record.health.as_deref())) {
                note(&mut changes, record);
            }
        }
        for (name, gone) in &self.containers {
            if !fresh.contains_key(name) {
                note(&mut changes, gone);
            }
        }
        self.containers = fresh;
        changes
    }

    /// Applies one event.
    pub fn apply(&mut self, event: &ContainerEvent) -> Changes {
        let mut changes = Changes::default();
        let Some(name) = event.attributes.get("name") else {
            return changes;
        };
        if event.attributes.get(MANAGED_LABEL).map(String::as_str) != Some("true") {
            return changes;
        }
        if event.action == "destroy" {
            if let Some(gone) = self.containers.remove(name) {
                note(&mut changes, &gone);
                changes.proxy_stopped = gone.proxy_of.is_some();
            }
            return changes;
        }
        let record = self
            .containers
            .entry(name.clone())
            .or_insert_with(|| record_from_labels(&event.id, name, &event.attributes));
        let action = event.action.as_str();
        match action {
            "start" | "restart" | "unpause" => {
                record.running = true;
                record.oom_killed = false;
                record.stop_requested = false;
                if record.proxy_of.is_some() {
                    self.proxy_starts += 1;
                    changes.proxy_started = true;
                }
            }
            "die" => {
                record.running = false;
                record.exit_code = event
                    .attributes
                    .get("exitCode")
                    .and_then(|code| code.parse().ok());
                if !record.stop_requested {
                    record.deaths += 1;
                    record.died_oom = record.oom_killed;
                }
                changes.proxy_stopped = record.proxy_of.is_some();
            }
            "oom" => record.oom_killed = true,
            // Comes before the `die` of a requested stop; by itself it changes nothing.
            "kill" => {
                record.stop_requested = true;
                return changes;
            }
            "pause" => record.running = false,
            _ => match action.strip_prefix("health_status: ") {
                Some(health) => record.health = Some(health.to_string()),
                // create, kill, stop, attach…: the state change, if any, comes as its own event.
                None => return changes,
            },
        }
        let record = record.clone();
        note(&mut changes, &record);
        changes
    }
}

fn note(changes: &mut Changes, record: &ContainerRecord) {
    if let Some(owner) = &record.owner {
        changes
            .resources
            .insert((owner.namespace.clone(), owner.resource.clone()));
    }
    if let Some(dependency) = &record.dependency {
        changes.dependencies.insert(dependency.clone());
    }
}

/// The health Docker shows in a listing's status line: `Up 5 minutes (healthy)`, `Up 2
/// seconds (health: starting)`; `None` without a health check.
pub fn health_in_status(status: &str) -> Option<String> {
    let inner = status.rsplit_once('(')?.1.strip_suffix(')')?;
    let health = inner.strip_prefix("health: ").unwrap_or(inner);
    matches!(health, "healthy" | "unhealthy" | "starting").then(|| health.to_string())
}

fn record_from_labels(id: &str, name: &str, labels: &HashMap<String, String>) -> ContainerRecord {
    let owner = match (
        labels.get(NAMESPACE_LABEL),
        labels.get(RESOURCE_LABEL),
        labels.get(DEPLOYMENT_LABEL),
    ) {
        (Some(namespace), Some(resource), Some(deployment)) => Some(Owner {
            namespace: namespace.clone(),
            resource: resource.clone(),
            deployment: deployment.clone(),
            sidecar: labels.contains_key(SIDECAR_LABEL),
        }),
        _ => None,
    };
    let dependency = labels
        .get(NAMESPACE_LABEL)
        .zip(labels.get(DEPENDENCY_LABEL))
        .map(|(namespace, name)| (namespace.clone(), name.clone()));
    let proxy_of = match labels.get(COMPONENT_LABEL).map(String::as_str) {
        Some("edge-proxy") => labels.get(SERVER_LABEL).cloned(),
        _ => None,
    };
    ContainerRecord {
        id: id.to_string(),
        name: name.to_string(),
        owner,
        proxy_of,
        dependency,
        running: false,
        exit_code: None,
        oom_killed: false,
        health: None,
        deaths: 0,
        died_oom: false,
        stop_requested: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app_labels(resource: &str) -> HashMap<String, String> {
        HashMap::from([
            (MANAGED_LABEL.to_string(), "true".to_string()),
            (NAMESPACE_LABEL.to_string(), "org-a".to_string()),
            (RESOURCE_LABEL.to_string(), resource.to_string()),
            (DEPLOYMENT_LABEL.to_string(), format!("dep-{resource}-1")),
        ])
    }

    fn event(action: &str, name: &str, mut attributes: HashMap<String, String>) -> ContainerEvent {
        attributes.insert("name".into(), name.into());
        ContainerEvent {
            id: format!("id-{name}"),
            action: action.into(),
            attributes,
        }
    }

    fn listed(name: &str, resource: &str, running: bool) -> Listed {
        Listed {
            id: format!("id-{name}"),
            name: name.into(),
            labels: app_labels(resource),
            running,
            health: None,
        }
    }

    fn resources(changes: &Changes) -> Vec<&str> {
        changes.resources.iter().map(|(_, r)| r.as_str()).collect()
    }

    #[test]
    fn a_listing_reports_what_appeared_stopped_or_vanished() {
        let mut index = ServerIndex::default();
        let first = index.replace(vec![
            listed("web-1", "web", true),
            listed("api-1", "api", true),
        ]);
        assert_eq!(resources(&first), ["api", "web"]);
        let same = index.replace(vec![
            listed("web-1", "web", true),
            listed("api-1", "api", true),
        ]);
        assert!(same.is_empty());
        let later = index.replace(vec![listed("web-1", "web", false)]);
        assert_eq!(resources(&later), ["api", "web"]);
        assert!(index.container("api-1").is_none());
        assert!(!index.container("web-1").unwrap().running);
    }

    #[test]
    fn a_dependencys_container_changes_wake_the_dependency_with_its_health() {
        let labels = HashMap::from([
            (MANAGED_LABEL.to_string(), "true".to_string()),
            (NAMESPACE_LABEL.to_string(), "org-a".to_string()),
            (DEPENDENCY_LABEL.to_string(), "db".to_string()),
        ]);
        let db = |health: &str| Listed {
            id: "id-db".into(),
            name: "berth-dep-org-a-db".into(),
            labels: labels.clone(),
            running: true,
            health: health_in_status(health),
        };
        let mut index = ServerIndex::default();
        let first = index.replace(vec![db("Up 2 seconds (health: starting)")]);
        let woken = BTreeSet::from([("org-a".to_string(), "db".to_string())]);
        assert_eq!(first.dependencies, woken);
        assert!(first.resources.is_empty());
        // The next listing shows it healthy: a change, though it ran all along.
        let healthy = index.replace(vec![db("Up 20 seconds (healthy)")]);
        assert_eq!(healthy.dependencies, woken);
        let record = index.container("berth-dep-org-a-db").unwrap();
        assert_eq!(record.health.as_deref(), Some("healthy"));
        let unhealthy = index.apply(&event(
            "health_status: unhealthy",
            "berth-dep-org-a-db",
            labels.clone(),
        ));
        assert_eq!(unhealthy.dependencies, woken);
    }

    #[test]
    fn health_is_read_from_a_listings_status_line() {
        assert_eq!(
            health_in_status("Up 5 minutes (healthy)").as_deref(),
            Some("healthy")
        );
        let starting = health_in_status("Up 1 second (health: starting)");
        assert_eq!(starting.as_deref(), Some("starting"));
        assert_eq!(health_in_status("Up 5 minutes"), None);
        assert_eq!(health_in_status("Exited (0) 3 seconds ago"), None);
    }

    #[test]
    fn events_track_death_exit_code_oom_health_and_removal() {
        let mut index = ServerIndex::default();
        index.replace(vec![listed("web-1", "web", true)]);
        let mut died = app_labels("web");
        died.insert("exitCode".into(), "137".into());
        assert_eq!(
            resources(&index.apply(&event("oom", "web-1", app_labels("web")))),
            ["web"]
        );
        assert_eq!(
            resources(&index.apply(&event("die", "web-1", died))),
            ["web"]
        );
        let record = index.container("web-1").unwrap();
        assert!(!record.running);
        assert_eq!(record.exit_code, Some(137));
        assert!(record.oom_killed);
        index.apply(&event(
            "health_status: unhealthy",
            "web-1",
            app_labels("web"),
        ));
        assert_eq!(
            index.container("web-1").unwrap().health.as_deref(),
            Some("unhealthy")
        );
        // Events that change nothing by themselves wake nobody.
        assert!(
            index
                .apply(&event("kill", "web-1", app_labels("web")))
                .is_empty()
        );
        assert_eq!(
            resources(&index.apply(&event("destroy", "web-1", app_labels("web")))),
            ["web"]
        );
        assert!(index.container("web-1").is_none());
    }

    #[test]
    fn only_stops_nobody_asked_for_count_as_deaths() {
        let mut index = ServerIndex::default();
        index.replace(vec![listed("web-1", "web", true)]);
        let apply = |index: &mut ServerIndex, action: &str| {
            index.apply(&event(action, "web-1", app_labels("web")));
        };
        // A crash Docker's restart policy recovers: die, start.
        apply(&mut index, "die");
        apply(&mut index, "start");
        assert_eq!(index.container("web-1").unwrap().deaths, 1);
        // `docker stop` or a restart: kill, die, (start).
        apply(&mut index, "kill");
        apply(&mut index, "die");
        apply(&mut index, "start");
        assert_eq!(index.container("web-1").unwrap().deaths, 1);
        // The next crash counts again.
        apply(&mut index, "die");
        assert_eq!(index.container("web-1").unwrap().deaths, 2);
    }

    #[test]
    fn a_proxy_start_is_counted_and_unmanaged_containers_ignored() {
        let mut index = ServerIndex::default();
        let proxy = HashMap::from([
            (MANAGED_LABEL.to_string(), "true".to_string()),
            (COMPONENT_LABEL.to_string(), "edge-proxy".to_string()),
            (SERVER_LABEL.to_string(), "org-a/local".to_string()),
        ]);
        let started = index.apply(&event(
            "start",
            "berth-edge-proxy.org-a.local",
            proxy.clone(),
        ));
        assert!(started.proxy_started);
        assert_eq!(index.proxy_starts(), 1);
        let died = index.apply(&event("die", "berth-edge-proxy.org-a.local", proxy));
        assert!(died.proxy_stopped && !died.proxy_started);
        assert!(
            index
                .apply(&event("start", "someone-elses", HashMap::new()))
                .is_empty()
        );
        assert!(index.container("someone-elses").is_none());
    }
}
