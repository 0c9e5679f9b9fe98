//! Which container's logs a request reads: the asked-for attempt's, else the serving attempt's,
//! else the newest one the resource has on its server (running first).

use berth_crds::DEPLOYMENT_LABEL;
use berth_remote::docker;
use berth_remote::{RemoteError, ServerConnection};
use bollard::Docker;
use bollard::models::{ContainerSummary, ContainerSummaryStateEnum};

/// One container of the resource, as Docker lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub id: String,
    pub deployment_id: Option<String>,
    /// Unix seconds.
    pub created: i64,
    pub running: bool,
}

impl Candidate {
    fn from_summary(summary: ContainerSummary) -> Option<Self> {
        let deployment_id = summary
            .labels
            .as_ref()
            .and_then(|labels| labels.get(DEPLOYMENT_LABEL).cloned());
        Some(Self {
            id: summary.id?,
            deployment_id,
            created: summary.created.unwrap_or(0),
            running: matches!(
                summary.state,
                Some(ContainerSummaryStateEnum::RUNNING | ContainerSummaryStateEnum::RESTARTING)
            ),
        })
    }
}

/// The container to read. `requested` is the caller's `deploymentId`, `serving` the attempt
/// the resource's status names as serving.
pub fn choose<'a>(
    candidates: &'a [Candidate],
    requested: Option<&str>,
    serving: Option<&str>,
) -> Option<&'a Candidate> {
    let of = |deployment: &str| {
        candidates
            .iter()
            .filter(|c| c.deployment_id.as_deref() == Some(deployment))
            .max_by_key(|c| (c.running, c.created))
    };
    if let Some(requested) = requested {
        return of(requested);
    }
    serving
        .and_then(of)
        .or_else(|| candidates.iter().max_by_key(|c| (c.running, c.created)))
}

/// Every container (running or not) labelled as the resource's, in its namespace.
pub async fn resource_containers(
    connection: &ServerConnection,
    docker: &Docker,
    namespace: &str,
    resource: &str,
) -> Result<Vec<Candidate>, RemoteError> {
    let containers = docker::resource_containers(connection, docker, namespace, resource).await?;
    Ok(containers
        .into_iter()
        .filter_map(Candidate::from_summary)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, deployment: &str, created: i64, running: bool) -> Candidate {
        Candidate {
            id: id.into(),
            deployment_id: Some(deployment.into()),
            created,
            running,
        }
    }

    #[test]
    fn the_serving_container_is_read_by_default_even_while_a_newer_one_starts() {
        let list = [
            candidate("old", "dep-1", 10, true),
            candidate("new", "dep-2", 20, true),
        ];
        assert_eq!(choose(&list, None, Some("dep-1")).unwrap().id, "old");
        assert_eq!(
            choose(&list, Some("dep-2"), Some("dep-1")).unwrap().id,
            "new"
        );
    }

    #[test]
    fn without_a_serving_container_the_newest_running_one_is_read() {
        let list = [
            candidate("stopped", "dep-3", 30, false),
            candidate("running", "dep-2", 20, true),
        ];
        assert_eq!(choose(&list, None, None).unwrap().id, "running");
        assert_eq!(choose(&list, None, Some("dep-gone")).unwrap().id, "running");
        let stopped = [
            candidate("a", "dep-1", 10, false),
            candidate("b", "dep-2", 20, false),
        ];
        assert_eq!(choose(&stopped, None, None).unwrap().id, "b");
    }

    #[test]
    fn an_asked_for_attempt_without_a_container_reads_nothing() {
        let list = [candidate("a", "dep-1", 10, true)];
        assert!(choose(&list, Some("dep-9"), None).is_none());
        assert!(choose(&[], None, Some("dep-1")).is_none());
    }
}
