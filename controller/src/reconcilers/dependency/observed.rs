//! What the server's observer already knows of a dependency's container: Docker runs the
//! kind's health check on the server itself (the container's `HEALTHCHECK`) and reports each
//! change as an event on the observer's open subscription. A ready dependency whose container
//! runs and whose check passes is therefore known healthy without an SSH channel; only a change
//! (or an observer that is not following events) makes the reconciler look over SSH.

use berth_crds::dependency_resource::{DependencyLifecycleStatus, DependencyResource};
use berth_remote::ServerId;
use futures::{Stream, StreamExt, stream};
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};

use super::plan::Names;
use crate::context::Context;
use crate::observer::index::ContainerRecord;
use crate::observer::{Connectivity, DependencyWake};

/// Whether the observer shows the ready dependency's container running and passing Docker's
/// health check, for the spec its status was decided for. `false` when it cannot tell.
pub fn healthy_by_events(
    context: &Context,
    dependency: &DependencyResource,
    names: &Names,
) -> bool {
    let status = dependency.status.as_ref();
    let ready = status.and_then(|s| s.lifecycle_status) == Some(DependencyLifecycleStatus::Ready);
    let current = status.and_then(|s| s.observed_generation) == dependency.metadata.generation;
    if !(ready && current) {
        return false;
    }
    let server = ServerId {
        namespace: dependency.namespace().unwrap_or_default(),
        name: dependency.spec.server_id.clone(),
    };
    let Some(observed) = context.observers.get(&server) else {
        return false;
    };
    observed.connectivity() == Connectivity::Live
        && observed
            .container(&names.container)
            .is_some_and(|record| passes(&record))
}

fn passes(record: &ContainerRecord) -> bool {
    record.running && record.health.as_deref() == Some("healthy")
}

/// The dependencies each wake names: one, or every one on the server (from the controller's
/// own store of DependencyResources).
pub fn woken(
    wakes: impl Stream<Item = DependencyWake> + Send + 'static,
    store: Store<DependencyResource>,
) -> impl Stream<Item = ObjectRef<DependencyResource>> + Send + 'static {
    wakes.flat_map(move |wake| {
        let named: Vec<_> = match wake {
            DependencyWake::One { namespace, name } => {
                vec![ObjectRef::new(&name).within(&namespace)]
            }
            DependencyWake::OnServer(server) => store
                .state()
                .iter()
                .filter(|d| {
                    d.namespace().as_deref() == Some(server.namespace.as_str())
                        && d.spec.server_id == server.name
                })
                .map(|d| ObjectRef::from_obj(d.as_ref()))
                .collect(),
        };
        stream::iter(named)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(running: bool, health: Option<&str>) -> ContainerRecord {
        ContainerRecord {
            id: "id".into(),
            name: "berth-dep-org-db".into(),
            owner: None,
            proxy_of: None,
            dependency: Some(("org".into(), "db".into())),
            running,
            exit_code: None,
            oom_killed: false,
            health: health.map(str::to_string),
            deaths: 0,
            died_oom: false,
            stop_requested: false,
        }
    }

    #[test]
    fn only_a_running_container_whose_check_passes_is_healthy_by_events() {
        assert!(passes(&record(true, Some("healthy"))));
        assert!(!passes(&record(true, Some("starting"))));
        assert!(!passes(&record(true, Some("unhealthy"))));
        assert!(
            !passes(&record(true, None)),
            "no health check: look over SSH"
        );
        assert!(!passes(&record(false, Some("healthy"))));
    }
}
