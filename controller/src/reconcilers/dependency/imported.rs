//! An imported dependency: an external database Berth records and checks but does not run.
//! Its URL (key `url` of the Secret `spec.connectionSecretRef` names) is checked from the named
//! server by the kind's own client (`import_check`); once the database answers, the URL is
//! published as the dependency's connection (Secret `<name>-connection`, owned by the object),
//! which bound apps read as they do a managed one's. A failing check says why on the object.

use std::time::Duration;

use berth_crds::condition::reason::{DEPENDENCY_MISSING, INVALID_SPEC};
use berth_crds::condition::{self, Condition, ConditionStatus, READY};
use berth_crds::dependency_resource::{
    DependencyConnection, DependencyLifecycleStatus, DependencyResource, DependencyResourceStatus,
    URL_KEY, connection_secret_name,
};
use berth_crds::dependency_url::checked_connection;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};

use super::import_check::{self, Check};
use super::plan::{Observed, reason};
use super::{announce, credentials, write};
use crate::cache::Caches;
use crate::context::Context;
use crate::error::Result;
use crate::reconcilers::deployment::connect;

/// How often an imported database that answered is checked again: nothing tells Berth when
/// an external database goes down, so it asks.
const CHECK_EVERY: Duration = Duration::from_secs(120);
/// How soon one that did not answer (or whose Secret or server is missing) is checked again.
const RECHECK: Duration = Duration::from_secs(30);

/// One reconcile of an imported dependency: its URL read and checked, then the database asked.
pub async fn apply(
    dependency: &DependencyResource,
    context: &Context,
    api: &Api<DependencyResource>,
) -> Result<Action> {
    let now = Timestamp::now();
    let not_ready =
        |reason: &str, message: String| super::plan::not_run(dependency, reason, message, now);
    let url = match source_url(dependency, context).await? {
        Ok(url) => url,
        Err(problem) => {
            write(api, dependency, &not_ready(DEPENDENCY_MISSING, problem)).await?;
            return Ok(Action::requeue(RECHECK));
        }
    };
    let connection = match checked_connection(dependency.spec.kind, &url) {
        Ok(connection) => connection,
        Err(why) => {
            let message = format!("{}: the connection URL {why}", source_name(dependency));
            write(api, dependency, &not_ready(INVALID_SPEC, message)).await?;
            return Ok(Action::requeue(RECHECK));
        }
    };
    let namespace = dependency.namespace().unwrap_or_default();
    let server = &dependency.spec.server_id;
    if Caches::get(&context.caches.servers, &namespace, server).is_none() {
        let message = format!("spec.serverId: server {server} does not exist");
        write(api, dependency, &not_ready(DEPENDENCY_MISSING, message)).await?;
        return Ok(Action::requeue(RECHECK));
    }
    let observed = observe(dependency, context, &url).await;
    if observed == Observed::Healthy {
        credentials::publish_imported_url(dependency, context, &url).await?;
    }
    announce(dependency, context, &observed).await;
    let status = status(dependency, connection, &observed, now);
    write(api, dependency, &status).await?;
    Ok(Action::requeue(match observed {
        Observed::Healthy => CHECK_EVERY,
        _ => RECHECK,
    }))
}

/// Asks the database from its server.
async fn observe(dependency: &DependencyResource, context: &Context, url: &str) -> Observed {
    let namespace = dependency.namespace().unwrap_or_default();
    let name = dependency.name_any();
    let failed = |code: &str, error: &dyn std::fmt::Display| Observed::Failed {
        code: code.to_string(),
        message: berth_crds::masking::Masker::new([url]).mask(&error.to_string()),
    };
    let target = match connect(context, &namespace, &dependency.spec.server_id).await {
        Ok((_, target)) => target,
        Err(error) => return failed("server_unreachable", &error),
    };
    let check = Check {
        kind: dependency.spec.kind,
        image: dependency.spec.image(),
        container: format!("berth-check-{namespace}-{name}"),
        namespace: &namespace,
        dependency: &name,
        url,
    };
    match import_check::run(&target, &check).await {
        Ok(None) => Observed::Healthy,
        Ok(Some(why)) => Observed::Unhealthy(why),
        Err(error) => failed("provider_error", &error),
    }
}

/// The Secret holding the URL, as the spec names it.
fn source_name(dependency: &DependencyResource) -> String {
    let name = dependency
        .spec
        .connection_secret_ref
        .as_ref()
        .map_or("", |r| r.name.as_str());
    format!("spec.connectionSecretRef: Secret {name}")
}

/// The URL the user's Secret holds, or what is missing.
async fn source_url(
    dependency: &DependencyResource,
    context: &Context,
) -> Result<std::result::Result<String, String>> {
    let namespace = dependency.namespace().unwrap_or_default();
    let Some(reference) = &dependency.spec.connection_secret_ref else {
        return Ok(Err("spec.connectionSecretRef is required".to_string()));
    };
    let secret = match Caches::get(&context.caches.secrets, &namespace, &reference.name) {
        Some(secret) => Some((*secret).clone()),
        // The cache may lag behind a Secret created a moment ago (by the REST import).
        None => {
            Api::<Secret>::namespaced(context.client.clone(), &namespace)
                .get_opt(&reference.name)
                .await?
        }
    };
    let Some(secret) = secret else {
        return Ok(Err(format!("{} does not exist", source_name(dependency))));
    };
    let url = secret
        .data
        .as_ref()
        .and_then(|data| data.get(URL_KEY))
        .and_then(|value| String::from_utf8(value.0.clone()).ok());
    Ok(url.ok_or_else(|| format!("{} has no `{URL_KEY}` key", source_name(dependency))))
}

/// The status of an imported dependency after its check: `ready` when the database answered,
/// otherwise `degraded` (it answered before) or `provisioning` (it never did), with why.
pub fn status(
    dependency: &DependencyResource,
    connection: DependencyConnection,
    observed: &Observed,
    now: Timestamp,
) -> DependencyResourceStatus {
    let current = dependency.status.clone().unwrap_or_default();
    let answered_before = matches!(
        current.lifecycle_status,
        Some(DependencyLifecycleStatus::Ready | DependencyLifecycleStatus::Degraded)
    );
    let server = &dependency.spec.server_id;
    let (lifecycle, ready, reason, message) = match observed {
        Observed::Healthy => (
            DependencyLifecycleStatus::Ready,
            ConditionStatus::True,
            reason::HEALTHY,
            format!(
                "{} at {}:{} answers from server {server}",
                dependency.spec.kind.as_str(),
                connection.host,
                connection.port
            ),
        ),
        Observed::Unhealthy(why) | Observed::Failed { message: why, .. } => (
            if answered_before {
                DependencyLifecycleStatus::Degraded
            } else {
                DependencyLifecycleStatus::Provisioning
            },
            ConditionStatus::False,
            if answered_before {
                reason::DEGRADED
            } else {
                reason::UNREACHABLE
            },
            format!("checked from server {server}: {why}"),
        ),
    };
    let generation = dependency.metadata.generation;
    let mut conditions = current.conditions;
    condition::merge(
        &mut conditions,
        Condition::new(READY, ready, reason, message, generation, now),
    );
    DependencyResourceStatus {
        observed_generation: generation,
        lifecycle_status: Some(lifecycle),
        provider_realization: None,
        connection: Some(DependencyConnection {
            secret_ref: Some(connection_secret_name(&dependency.name_any())),
            ..connection
        }),
        data_version: None,
        data_volume: None,
        upgrade: None,
        credentials: None,
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::dependency_resource::DependencyKind;
    use serde_json::json;

    fn imported() -> DependencyResource {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResource",
            "metadata": { "name": "ext", "namespace": "org-a", "generation": 1 },
            "spec": { "kind": "postgres", "projectId": "p", "environmentId": "e",
                      "serverId": "local", "name": "External", "source": "imported",
                      "connectionSecretRef": { "name": "ext-import" } },
        }))
        .unwrap()
    }

    fn connection() -> DependencyConnection {
        checked_connection(
            DependencyKind::Postgres,
            "postgres://u:pw-1@198.18.0.9/orders",
        )
        .unwrap()
    }

    #[test]
    fn an_import_that_answers_is_ready_with_its_masked_connection() {
        let db = imported();
        let status = status(&db, connection(), &Observed::Healthy, Timestamp::now());
        assert_eq!(
            status.lifecycle_status,
            Some(DependencyLifecycleStatus::Ready)
        );
        let shown = status.connection.unwrap();
        assert_eq!(
            shown.masked_connection,
            "postgres://u:****@198.18.0.9/orders"
        );
        assert_eq!(shown.secret_ref.as_deref(), Some("ext-connection"));
        assert!(status.provider_realization.is_none());
    }

    #[test]
    fn an_import_that_stops_answering_is_degraded_and_one_that_never_did_is_not() {
        let mut db = imported();
        let refused = Observed::Unhealthy("psql failed (exit code 2): password refused".into());
        let first = status(&db, connection(), &refused, Timestamp::now());
        assert_eq!(
            first.lifecycle_status,
            Some(DependencyLifecycleStatus::Provisioning)
        );
        let ready = condition::find(&first.conditions, READY).unwrap();
        assert_eq!(ready.reason, reason::UNREACHABLE);
        assert!(
            ready
                .message
                .contains("checked from server local: psql failed")
        );
        db.status = Some(status(
            &db,
            connection(),
            &Observed::Healthy,
            Timestamp::now(),
        ));
        let later = status(&db, connection(), &refused, Timestamp::now());
        assert_eq!(
            later.lifecycle_status,
            Some(DependencyLifecycleStatus::Degraded)
        );
    }
}
