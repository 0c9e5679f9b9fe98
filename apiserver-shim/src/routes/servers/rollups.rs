//! The `rollups` of `servers.show/v1` (Appaloft's `buildRollups`): the resources with
//! deployments or domain bindings on a server, its deployment attempts by status and the newest,
//! its domain bindings by status and the newest. The attempts and bindings come from the shim's
//! watch caches, and the attempts removed beyond a resource's history limit from the attempt
//! archive (as `GET /deployments?serverId=` counts them); nothing asks the API server. Only what
//! the caller may see is counted.

use std::collections::{BTreeMap, BTreeSet};

use berth_api::servers::{
    DeploymentRollup, DeploymentStatusCount, DomainBindingStatus, DomainRollup, DomainStatusCount,
    ResourceRollup, ServerRollups,
};
use berth_crds::condition::{self, ConditionStatus, READY};
use berth_crds::deployment::DeploymentState;
use berth_crds::domain_binding::{DomainBinding, condition_type, reason};
use berth_crds::server::Server;
use berth_observations::{AttemptQuery, AttemptRecord};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use crate::auth::{Caller, ScopeDimension};
use crate::domain::deployments::{archive_within, attempt_state, visible};
use crate::domain::objects::{all_in, find_in};
use crate::error::ApiResult;
use crate::observation_store::store_call;
use crate::state::AppState;

/// One deployment attempt or domain binding on the server, as the rollups count it.
#[derive(Clone, Debug, PartialEq)]
pub struct Counted<S> {
    pub id: String,
    pub resource: String,
    pub status: S,
    /// Creation time (Unix milliseconds): the newest is the latest.
    pub created_ms: i64,
}

/// The server's attempts the archive kept after their objects were removed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Archived {
    pub counts: Vec<(DeploymentState, usize)>,
    pub newest: Option<Counted<DeploymentState>>,
}

/// The rollups of the attempts `live` (objects that exist) and `archived`, and of `bindings`,
/// all on one server.
pub fn rollups(
    live: &[Counted<DeploymentState>],
    archived: &Archived,
    bindings: &[Counted<DomainBindingStatus>],
) -> ServerRollups {
    let resources: BTreeSet<&str> = live
        .iter()
        .map(|a| a.resource.as_str())
        .chain(bindings.iter().map(|b| b.resource.as_str()))
        .collect();
    let mut by_state: BTreeMap<String, (DeploymentState, usize)> = BTreeMap::new();
    let live_counts = live.iter().map(|a| (a.status, 1));
    for (state, count) in live_counts.chain(archived.counts.iter().copied()) {
        by_state.entry(state_name(state)).or_insert((state, 0)).1 += count;
    }
    let latest_attempt = newest(live.iter().chain(archived.newest.as_ref()));
    let mut by_binding_status: BTreeMap<&str, (DomainBindingStatus, usize)> = BTreeMap::new();
    for binding in bindings {
        let status = binding.status;
        by_binding_status
            .entry(status.as_str())
            .or_insert((status, 0))
            .1 += 1;
    }
    let latest_binding = newest(bindings.iter());
    ServerRollups {
        resources: ResourceRollup {
            total: resources.len(),
            deployed_resource_ids: resources.into_iter().map(str::to_string).collect(),
        },
        deployments: DeploymentRollup {
            total: by_state.values().map(|(_, count)| count).sum(),
            status_counts: by_state
                .into_values()
                .map(|(status, count)| DeploymentStatusCount { status, count })
                .collect(),
            latest_deployment_id: latest_attempt.map(|a| a.id.clone()),
            latest_deployment_status: latest_attempt.map(|a| a.status),
        },
        domains: DomainRollup {
            total: bindings.len(),
            status_counts: by_binding_status
                .into_values()
                .map(|(status, count)| DomainStatusCount { status, count })
                .collect(),
            latest_domain_binding_id: latest_binding.map(|b| b.id.clone()),
            latest_domain_binding_status: latest_binding.map(|b| b.status),
        },
    }
}

/// The one created last; ties by id, as `GET /deployments` orders them.
fn newest<'a, S: 'a>(items: impl Iterator<Item = &'a Counted<S>>) -> Option<&'a Counted<S>> {
    items.max_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)))
}

/// `cancel-requested`…: the wire name, by which status counts are ordered.
fn state_name(state: DeploymentState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A domain binding's status in Appaloft's words, from its conditions: deleted while it is
/// being deleted, ready once served; otherwise how far it got: not observed yet (`requested`),
/// its name not leading to the server (`pending_verification`), verified with no route reported
/// (`bound`), routed and waiting for its certificate (`certificate_pending`), or verified but
/// not served (`not_ready`).
pub fn binding_status(binding: &DomainBinding) -> DomainBindingStatus {
    if binding.metadata.deletion_timestamp.is_some() {
        return DomainBindingStatus::Deleted;
    }
    let conditions = binding
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let holds =
        |type_: &str| condition::find(conditions, type_).map(|c| c.status == ConditionStatus::True);
    if holds(READY) == Some(true) {
        return DomainBindingStatus::Ready;
    }
    match (
        holds(condition_type::VERIFIED),
        holds(condition_type::ROUTE_APPLIED),
    ) {
        (None, _) => DomainBindingStatus::Requested,
        (Some(false), _) => DomainBindingStatus::PendingVerification,
        (Some(true), None) => DomainBindingStatus::Bound,
        (Some(true), Some(false)) => DomainBindingStatus::NotReady,
        (Some(true), Some(true)) => {
            let waiting = condition::find(conditions, condition_type::CERTIFICATE_SERVED)
                .is_some_and(|c| c.reason == reason::WAITING_FOR_CERTIFICATE);
            if waiting {
                DomainBindingStatus::CertificatePending
            } else {
                DomainBindingStatus::NotReady
            }
        }
    }
}

fn created_ms(metadata: &ObjectMeta) -> i64 {
    metadata
        .creation_timestamp
        .as_ref()
        .map_or(0, |t| t.0.as_millisecond())
}

/// The rollups of `server` as `caller` may see them.
pub async fn of(state: &AppState, caller: &Caller, server: &Server) -> ApiResult<ServerRollups> {
    let namespace = server.namespace().unwrap_or_default();
    let name = server.name_any();
    let live: Vec<Counted<DeploymentState>> = all_in(&state.caches.deployments, &namespace)
        .into_iter()
        .filter(|d| d.spec.server_id == name && visible(caller, d))
        .map(|d| Counted {
            id: d.name_any(),
            resource: d.spec.resource_id.clone(),
            status: attempt_state(&d),
            created_ms: created_ms(&d.metadata),
        })
        .collect();
    let bindings = bindings_on(state, caller, &namespace, &name);
    let query = AttemptQuery {
        server: Some(name),
        ..archive_within(&namespace, caller)
    };
    let archived = store_call(&state.observations, "server rollups", move |store| {
        let mut counts = Vec::new();
        for status in DeploymentState::ALL {
            let by_status = AttemptQuery {
                status: Some(state_name(status)),
                ..query.clone()
            };
            let count = store.count_removed(&by_status)?;
            if count > 0 {
                counts.push((status, usize::try_from(count).unwrap_or(usize::MAX)));
            }
        }
        let newest = AttemptQuery { limit: 1, ..query };
        let newest = store.removed_attempts(&newest)?.first().and_then(removed);
        Ok(Archived { counts, newest })
    })
    .await?;
    Ok(rollups(&live, &archived, &bindings))
}

/// A removed attempt as counted; `None` for a row whose status is not one Berth knows.
fn removed(row: &AttemptRecord) -> Option<Counted<DeploymentState>> {
    Some(Counted {
        id: row.deployment.clone(),
        resource: row.resource.clone(),
        status: serde_json::from_value(row.status.clone().into()).ok()?,
        created_ms: row.created_ms,
    })
}

/// The domain bindings served by server `name`'s edge proxy (the binding's own server, else
/// its resource's) that `caller` may see.
fn bindings_on(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    name: &str,
) -> Vec<Counted<DomainBindingStatus>> {
    all_in(&state.caches.domain_bindings, namespace)
        .into_iter()
        .filter_map(|binding| {
            let resource_id = &binding.spec.resource_id;
            let resource =
                find_in(&state.caches.resources, namespace, resource_id, "resource").ok();
            let server = binding
                .status
                .as_ref()
                .and_then(|s| s.server_id.clone())
                .or_else(|| binding.spec.server_id.clone())
                .or_else(|| resource.as_ref().and_then(|r| r.spec.server_id.clone()));
            // Of a resource that is gone, the project and environment are unknown: only a caller
            // not limited to some sees the binding.
            let (project, environment) = resource.as_ref().map_or(("", ""), |r| {
                (r.spec.project_id.as_str(), r.spec.environment_id.as_str())
            });
            let seen = caller.sees(ScopeDimension::Resource, resource_id)
                && caller.sees(ScopeDimension::Project, project)
                && caller.sees(ScopeDimension::Environment, environment);
            (server.as_deref() == Some(name) && seen).then(|| Counted {
                id: binding.name_any(),
                resource: resource_id.clone(),
                status: binding_status(&binding),
                created_ms: created_ms(&binding.metadata),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::condition::Condition;
    use berth_crds::domain_binding::{DomainBindingSpec, DomainBindingStatus as BindingStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use serde_json::json;

    fn attempt(
        id: &str,
        resource: &str,
        status: DeploymentState,
        ms: i64,
    ) -> Counted<DeploymentState> {
        Counted {
            id: id.into(),
            resource: resource.into(),
            status,
            created_ms: ms,
        }
    }

    fn binding(
        id: &str,
        resource: &str,
        status: DomainBindingStatus,
        ms: i64,
    ) -> Counted<DomainBindingStatus> {
        Counted {
            id: id.into(),
            resource: resource.into(),
            status,
            created_ms: ms,
        }
    }

    #[test]
    fn rollups_count_distinct_resources_statuses_and_name_the_newest() {
        let live = [
            attempt("dep-web-2", "web", DeploymentState::Succeeded, 2_000),
            attempt("dep-web-3", "web", DeploymentState::Running, 3_000),
            attempt("dep-api-1", "api", DeploymentState::Failed, 2_500),
        ];
        let archived = Archived {
            counts: vec![
                (DeploymentState::Succeeded, 4),
                (DeploymentState::RolledBack, 1),
            ],
            newest: Some(attempt(
                "dep-web-1",
                "web",
                DeploymentState::Succeeded,
                1_000,
            )),
        };
        let bindings = [
            binding("dom-shop", "web", DomainBindingStatus::Ready, 500),
            binding(
                "dom-docs",
                "docs",
                DomainBindingStatus::PendingVerification,
                4_000,
            ),
        ];
        let shown = serde_json::to_value(rollups(&live, &archived, &bindings)).unwrap();
        assert_eq!(
            shown,
            json!({
                "resources": {"total": 3, "deployedResourceIds": ["api", "docs", "web"]},
                "deployments": {
                    "total": 8,
                    "statusCounts": [
                        {"status": "failed", "count": 1},
                        {"status": "rolled-back", "count": 1},
                        {"status": "running", "count": 1},
                        {"status": "succeeded", "count": 5},
                    ],
                    "latestDeploymentId": "dep-web-3",
                    "latestDeploymentStatus": "running",
                },
                "domains": {
                    "total": 2,
                    "statusCounts": [
                        {"status": "pending_verification", "count": 1},
                        {"status": "ready", "count": 1},
                    ],
                    "latestDomainBindingId": "dom-docs",
                    "latestDomainBindingStatus": "pending_verification",
                },
            })
        );
    }

    #[test]
    fn an_idle_server_has_zero_rollups_without_latest_ids() {
        let shown = serde_json::to_value(rollups(&[], &Archived::default(), &[])).unwrap();
        assert_eq!(
            shown,
            json!({
                "resources": {"total": 0, "deployedResourceIds": []},
                "deployments": {"total": 0, "statusCounts": []},
                "domains": {"total": 0, "statusCounts": []},
            })
        );
        // Only removed attempts left: the newest of the archive is the latest.
        let archived = Archived {
            counts: vec![(DeploymentState::Canceled, 2)],
            newest: Some(attempt("dep-old", "web", DeploymentState::Canceled, 9)),
        };
        let only_archived = rollups(&[], &archived, &[]);
        assert_eq!(only_archived.deployments.total, 2);
        assert_eq!(
            only_archived.deployments.latest_deployment_id.as_deref(),
            Some("dep-old")
        );
        assert_eq!(
            only_archived.resources.total, 0,
            "attempts that exist name the resources"
        );
    }

    #[test]
    fn every_state_is_asked_once_by_its_wire_name() {
        let names: BTreeSet<String> = DeploymentState::ALL.into_iter().map(state_name).collect();
        assert_eq!(names.len(), 9);
        assert!(names.contains("cancel-requested") && names.contains("rolled-back"));
        let row = AttemptRecord {
            namespace: "org".into(),
            deployment: "dep-1".into(),
            resource: "web".into(),
            project: "p".into(),
            environment: "e".into(),
            server: "srv".into(),
            status: "rolled-back".into(),
            created_ms: 7,
            removed: true,
            object: String::new(),
        };
        assert_eq!(
            removed(&row),
            Some(attempt("dep-1", "web", DeploymentState::RolledBack, 7))
        );
        let odd = AttemptRecord {
            status: "interrupted".into(),
            ..row
        };
        assert_eq!(removed(&odd), None);
    }

    fn with_conditions(conditions: &[(&str, bool, &str)]) -> DomainBinding {
        let spec: DomainBindingSpec =
            serde_json::from_value(json!({"resourceId": "web", "hostname": "shop.example.com"}))
                .unwrap();
        let mut binding = DomainBinding::new("dom-1", spec);
        let now = Timestamp::from_second(1_900_000_000).unwrap();
        binding.status = Some(BindingStatus {
            conditions: conditions
                .iter()
                .map(|(type_, holds, reason)| {
                    let status = if *holds {
                        ConditionStatus::True
                    } else {
                        ConditionStatus::False
                    };
                    Condition::new(type_, status, reason, "", None, now)
                })
                .collect(),
            ..BindingStatus::default()
        });
        binding
    }

    #[test]
    fn binding_statuses_follow_how_far_the_binding_got() {
        use DomainBindingStatus as S;
        let verified = (condition_type::VERIFIED, true, reason::RESOLVES_TO_SERVER);
        let routed = (condition_type::ROUTE_APPLIED, true, reason::APPLIED);
        let cases = [
            (vec![], S::Requested),
            (vec![(READY, false, reason::SERVER_NOT_READY)], S::Requested),
            (
                vec![(condition_type::VERIFIED, false, reason::RESOLVES_ELSEWHERE)],
                S::PendingVerification,
            ),
            (vec![verified], S::Bound),
            (
                vec![
                    verified,
                    (condition_type::ROUTE_APPLIED, false, reason::NOT_APPLIED),
                ],
                S::NotReady,
            ),
            (
                vec![
                    verified,
                    routed,
                    (
                        condition_type::CERTIFICATE_SERVED,
                        false,
                        reason::WAITING_FOR_CERTIFICATE,
                    ),
                ],
                S::CertificatePending,
            ),
            (
                vec![
                    verified,
                    routed,
                    (
                        condition_type::CERTIFICATE_SERVED,
                        false,
                        reason::SERVED_CERTIFICATE_DIFFERS,
                    ),
                ],
                S::NotReady,
            ),
            (
                vec![verified, routed, (READY, true, "Reconciled")],
                S::Ready,
            ),
        ];
        for (conditions, expected) in cases {
            assert_eq!(
                binding_status(&with_conditions(&conditions)),
                expected,
                "{conditions:?}"
            );
        }
        let mut going = with_conditions(&[(READY, true, "Reconciled")]);
        going.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        assert_eq!(binding_status(&going), S::Deleted);
    }
}
