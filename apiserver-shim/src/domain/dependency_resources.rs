//! Dependency resources as the routes reach them: the caller's scoped lookup, Appaloft's
//! summaries of a dependency and of a resource's binding to one, what blocks a delete, and
//! which dependency a resource may bind, whether its project and environment are open to a
//! change, and asking for a credential rotation. Connections are shown masked only.

use std::sync::Arc;

use berth_api::dependencies::{
    BindingSecretRotation, BindingTarget, DeleteBlocker, DeleteSafety, DependencyBindingSummary,
    DependencyConnectionSummary, DependencyExposureSummary, DependencyResourceSummary,
    ProviderRealizationSummary, Readiness, ReadinessStatus, SourceMode,
};
use berth_crds::condition::{self, ConditionStatus};
use berth_crds::dependency_resource::{
    DependencyExposure, DependencyKind, DependencyLifecycleStatus, DependencyResource,
    DependencySource, EXPOSED_CONDITION, mask_url_password,
};
use berth_crds::member::OrganizationRole;
use berth_crds::resource::{DependencyBinding, Resource};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::auth::{Caller, ScopeDimension};
use crate::cache::catch_up;
use crate::domain::fields::slugify;
use crate::domain::objects::{all_in, find_in};
use crate::domain::time::created_at;
use crate::domain::{environments, projects};
use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, FIELD_MANAGER};
use crate::write::actor_annotations;

/// What an archived or locked project or environment refuses to change, in its 409.
pub const WHAT: &str = "dependency resources";

/// The code of a bind refused because the dependency is of another project or environment.
pub const CONTEXT_MISMATCH: &str = "resource_dependency_binding_context_mismatch";

/// Whether a deploy token may see a dependency: its project and environment must be in scope.
pub fn visible_to(caller: &Caller, dependency: &DependencyResource) -> bool {
    caller.sees(ScopeDimension::Project, &dependency.spec.project_id)
        && caller.sees(ScopeDimension::Environment, &dependency.spec.environment_id)
}

/// A dependency of the caller's organization the caller may see, or 404 (another
/// organization's looks the same as a missing one).
pub fn lookup(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<DependencyResource>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let dependency = find_in(
        &state.caches.dependency_resources,
        &organization.namespace,
        id,
        "dependency resource",
    )?;
    if !visible_to(caller, &dependency) {
        return Err(ApiError::not_found("dependency resource", id));
    }
    Ok(dependency)
}

/// The lifecycle as Appaloft reports it: `deleted` once deletion began, `provisioning` until
/// the controller said otherwise.
pub fn lifecycle(dependency: &DependencyResource) -> DependencyLifecycleStatus {
    if dependency.metadata.deletion_timestamp.is_some() {
        return DependencyLifecycleStatus::Deleted;
    }
    dependency
        .status
        .as_ref()
        .and_then(|s| s.lifecycle_status)
        .unwrap_or(DependencyLifecycleStatus::Provisioning)
}

fn source_mode(dependency: &DependencyResource) -> SourceMode {
    match dependency.spec.source {
        DependencySource::Managed => SourceMode::AppaloftManaged,
        DependencySource::Imported => SourceMode::ImportedExternal,
    }
}

fn provider_key(dependency: &DependencyResource) -> String {
    let kind = dependency.spec.kind.as_str();
    match dependency.spec.source {
        DependencySource::Managed => format!("berth-managed-{kind}"),
        DependencySource::Imported => format!("external-{kind}"),
    }
}

/// The connection the status shows, masked once more here in case a URL came in unmasked.
pub fn connection(dependency: &DependencyResource) -> Option<DependencyConnectionSummary> {
    let connection = dependency.status.as_ref()?.connection.as_ref()?;
    Some(DependencyConnectionSummary {
        host: connection.host.clone(),
        port: Some(connection.port),
        database_name: connection.database_name.clone(),
        masked_connection: mask_url_password(&connection.masked_connection),
        secret_ref: connection.secret_ref.clone(),
    })
}

fn realization(dependency: &DependencyResource) -> Option<ProviderRealizationSummary> {
    let status = dependency.status.as_ref()?;
    let realization = status.provider_realization.as_ref()?;
    let generation = status
        .observed_generation
        .or(dependency.metadata.generation)
        .unwrap_or(1);
    Some(ProviderRealizationSummary {
        status: realization.status,
        attempt_id: format!("generation-{generation}"),
        attempted_at: realization
            .realized_at
            .clone()
            .unwrap_or_else(|| created_at(&dependency.metadata)),
        provider_resource_handle: realization.provider_resource_handle.clone(),
        volume: realization.volume.clone(),
        network: realization.network.clone(),
        realized_at: realization.realized_at.clone(),
        failure_code: realization.failure_code.clone(),
        failure_message: realization.failure_message.clone(),
    })
}

fn blocked(reason: String) -> Readiness {
    Readiness {
        status: ReadinessStatus::Blocked,
        reason: Some(reason),
    }
}

/// Whether a resource bound to it gets a working connection now.
pub fn binding_readiness(dependency: &DependencyResource) -> Readiness {
    match lifecycle(dependency) {
        DependencyLifecycleStatus::Ready => Readiness {
            status: ReadinessStatus::Ready,
            reason: None,
        },
        other => blocked(format!("the dependency is {}, not ready", other.as_str())),
    }
}

/// Every binding of dependency `id` among `resources`: (resource, binding).
pub fn bindings_of<'a>(
    resources: &'a [Arc<Resource>],
    id: &'a str,
) -> impl Iterator<Item = (&'a Resource, &'a DependencyBinding)> + 'a {
    resources.iter().flat_map(move |resource| {
        resource
            .spec
            .dependency_bindings
            .iter()
            .filter(move |b| b.dependency_resource_id == id)
            .map(move |b| (resource.as_ref(), b))
    })
}

/// One `resource-binding` blocker per resource that binds dependency `id`, naming its bindings.
pub fn delete_blockers(resources: &[Arc<Resource>], id: &str) -> Vec<DeleteBlocker> {
    let mut blockers: Vec<DeleteBlocker> = Vec::new();
    for (resource, binding) in bindings_of(resources, id) {
        let resource_id = resource.name_any();
        let binding_id = binding.id().to_string();
        match blockers
            .iter_mut()
            .find(|b| b.related_entity_id.as_deref() == Some(resource_id.as_str()))
        {
            Some(blocker) => {
                blocker.count += 1;
                blocker.binding_ids.push(binding_id);
            }
            None => blockers.push(DeleteBlocker {
                kind: "resource-binding".into(),
                related_entity_id: Some(resource_id),
                related_entity_type: Some("resource".into()),
                count: 1,
                binding_ids: vec![binding_id],
            }),
        }
    }
    blockers
}

/// Appaloft's summary of `dependency`, its delete blockers read from `resources` (its
/// namespace's).
pub fn summary(
    dependency: &DependencyResource,
    resources: &[Arc<Resource>],
) -> DependencyResourceSummary {
    let id = dependency.name_any();
    let spec = &dependency.spec;
    let managed = spec.source == DependencySource::Managed;
    DependencyResourceSummary {
        project_id: spec.project_id.clone(),
        environment_id: spec.environment_id.clone(),
        server_id: spec.server_id.clone(),
        name: spec.name.clone(),
        slug: slugify(&spec.name),
        kind: spec.kind,
        source_mode: source_mode(dependency),
        provider_key: provider_key(dependency),
        provider_managed: managed,
        description: spec.description.clone(),
        image: managed.then(|| spec.image().to_string()),
        lifecycle_status: lifecycle(dependency),
        connection: connection(dependency),
        provider_realization: realization(dependency),
        desired_capabilities: Vec::new(),
        capability_readbacks: Vec::new(),
        binding_readiness: binding_readiness(dependency),
        delete_safety: DeleteSafety {
            blockers: delete_blockers(resources, &id),
        },
        credentials: dependency
            .status
            .as_ref()
            .and_then(|s| s.credentials.clone()),
        exposure: exposure(dependency),
        data_version: dependency
            .status
            .as_ref()
            .and_then(|s| s.data_version.clone()),
        upgrade: dependency.status.as_ref().and_then(|s| s.upgrade.clone()),
        created_at: created_at(&dependency.metadata),
        id,
    }
}

/// The host port asked for and what the controller's `Exposed` condition says of it (a port
/// is published only once the firewall rules guarding it are in place).
fn exposure(dependency: &DependencyResource) -> Option<DependencyExposureSummary> {
    let asked = dependency.spec.exposure.as_ref()?;
    let conditions = dependency.status.as_ref().map(|s| s.conditions.as_slice());
    let exposed = conditions.and_then(|c| condition::find(c, EXPOSED_CONDITION));
    let current = exposed.filter(|c| c.observed_generation == dependency.metadata.generation);
    Some(DependencyExposureSummary {
        host_port: asked.host_port,
        allow_from: asked.allow_from.clone(),
        published: current.is_some_and(|c| c.status == ConditionStatus::True),
        message: Some(current.map_or_else(
            || "waiting for the controller to put the firewall rules in place".to_string(),
            |c| c.message.clone(),
        )),
    })
}

/// Whether the next deployment of the resource can take the value.
fn snapshot_readiness(dependency: Option<&DependencyResource>) -> Readiness {
    let Some(dependency) = dependency else {
        return blocked("the dependency resource no longer exists".into());
    };
    match (binding_readiness(dependency), lifecycle(dependency)) {
        (ready, _) if ready.status == ReadinessStatus::Ready => ready,
        (_, DependencyLifecycleStatus::Provisioning) => Readiness {
            status: ReadinessStatus::Deferred,
            reason: Some("the dependency is still provisioning".into()),
        },
        (not_ready, _) => not_ready,
    }
}

/// Appaloft's summary of `binding` of `resource`; `dependency` is `None` when it is gone.
pub fn binding_summary(
    resource: &Resource,
    binding: &DependencyBinding,
    dependency: Option<&DependencyResource>,
) -> DependencyBindingSummary {
    let secret_ref = dependency
        .and_then(connection)
        .and_then(|c| c.secret_ref)
        .or_else(|| dependency.map(|d| format!("{}-connection", d.name_any())));
    DependencyBindingSummary {
        id: binding.id().to_string(),
        project_id: resource.spec.project_id.clone(),
        environment_id: resource.spec.environment_id.clone(),
        resource_id: resource.name_any(),
        dependency_resource_id: binding.dependency_resource_id.clone(),
        dependency_resource_name: dependency.map(|d| d.spec.name.clone()),
        dependency_resource_slug: dependency.map(|d| slugify(&d.spec.name)),
        kind: dependency.map(|d| d.spec.kind),
        source_mode: dependency.map(source_mode),
        provider_key: dependency.map(provider_key),
        provider_managed: dependency.map(|d| d.spec.source == DependencySource::Managed),
        lifecycle_status: dependency.map_or(DependencyLifecycleStatus::Deleted, lifecycle),
        secret_rotation: dependency.and_then(|d| secret_rotation(d, secret_ref.clone())),
        target: BindingTarget {
            target_name: binding.target_name.clone(),
            scope: binding.scope,
            injection_mode: binding.injection_mode,
            secret_ref,
        },
        connection: dependency.and_then(connection),
        binding_readiness: dependency.map_or_else(
            || blocked("the dependency resource no longer exists".into()),
            binding_readiness,
        ),
        snapshot_readiness: snapshot_readiness(dependency),
        status: "active".into(),
        created_at: created_at(&resource.metadata),
    }
}

/// [`environments::require_open`] for an existing dependency (its project or environment may be gone:
/// nothing to refuse then).
pub fn require_open_for(
    state: &AppState,
    caller: &Caller,
    dependency: &DependencyResource,
) -> ApiResult<()> {
    if let (Ok(project), Ok(environment)) = (
        projects::lookup(state, caller, &dependency.spec.project_id),
        environments::lookup(state, caller, &dependency.spec.environment_id),
    ) {
        environments::require_open(&project, &environment, WHAT)?;
    }
    Ok(())
}

/// Why a dependency's login cannot be rotated; `None` for a managed PostgreSQL, the one kind
/// rotation is built for.
pub fn rotation_unsupported(dependency: &DependencyResource) -> Option<String> {
    let spec = &dependency.spec;
    match (spec.source, spec.kind) {
        (DependencySource::Managed, DependencyKind::Postgres) => None,
        (DependencySource::Imported, _) => Some(format!(
            "dependency resource {} is imported: its credentials are the external database's \
             own; credential rotation is built for a managed PostgreSQL only",
            dependency.name_any()
        )),
        (_, kind) => Some(format!(
            "dependency resource {} is a {}: credential rotation is built for a managed \
             PostgreSQL only",
            dependency.name_any(),
            kind.as_str()
        )),
    }
}

/// Asks the controller to rotate a managed PostgreSQL's login (a new login beside the old
/// one, the bound apps redeployed on it, then the old one revoked) by writing a new
/// `spec.rotateCredentials`; the value written, which the dependency's `credentials.rotation`
/// shows once the new login is issued. Refused in an archived or locked project or
/// environment.
pub async fn ask_rotation(
    state: &AppState,
    caller: &Caller,
    dependency: &DependencyResource,
) -> ApiResult<String> {
    require_open_for(state, caller, dependency)?;
    let rotation = Timestamp::now().to_string();
    let patch = json!({"spec": {"rotateCredentials": rotation}});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let namespace = dependency.namespace().unwrap_or_default();
    let id = dependency.name_any();
    Api::<DependencyResource>::namespaced(state.client.clone(), &namespace)
        .patch(&id, &params, &Patch::Merge(&patch))
        .await?;
    tracing::info!(dependency = %id, "dependency credential rotation asked for");
    Ok(rotation)
}

/// The binding's secret as last rotated: the rotation the dependency's current login was
/// issued for, once there was one.
fn secret_rotation(
    dependency: &DependencyResource,
    secret_ref: Option<String>,
) -> Option<BindingSecretRotation> {
    let credentials = dependency.status.as_ref()?.credentials.as_ref()?;
    Some(BindingSecretRotation {
        secret_ref,
        secret_version: credentials.rotation.clone()?,
        rotated_at: credentials.issued_at.clone()?,
    })
}

/// The dependency `id` for `resource` to bind: visible to the caller (else 404 on
/// `dependencyResourceId`), of the resource's project and environment (else
/// [`CONTEXT_MISMATCH`]) and not being deleted.
pub fn bindable(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    id: &str,
) -> ApiResult<Arc<DependencyResource>> {
    let dependency = lookup(state, caller, id)
        .map_err(|error| error.with_detail("field", "dependencyResourceId"))?;
    let (spec, wanted) = (&dependency.spec, &resource.spec);
    if spec.project_id != wanted.project_id || spec.environment_id != wanted.environment_id {
        return Err(ApiError::conflict_code(
            CONTEXT_MISMATCH,
            format!(
                "dependency resource {id} belongs to environment {} of project {}; resource {} \
                 binds dependencies of its own environment ({} of project {})",
                spec.environment_id,
                spec.project_id,
                resource.name_any(),
                wanted.environment_id,
                wanted.project_id
            ),
        )
        .with_detail("field", "dependencyResourceId"));
    }
    if dependency.metadata.deletion_timestamp.is_some() {
        return Err(
            ApiError::conflict(format!("dependency resource {id} is being deleted"))
                .with_detail("field", "dependencyResourceId"),
        );
    }
    Ok(dependency)
}

/// Writes the spec fields of `spec` alone on `dependency` (a merge patch: `null` removes a
/// field), noting who changed it; returns once the cache has it.
pub async fn merge_spec(
    state: &AppState,
    caller: &Caller,
    dependency: &DependencyResource,
    spec: serde_json::Value,
) -> ApiResult<()> {
    let patch = json!({
        "metadata": { "annotations": actor_annotations(caller) },
        "spec": spec,
    });
    let namespace = dependency.namespace().unwrap_or_default();
    let api = Api::<DependencyResource>::namespaced(state.client.clone(), &namespace);
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let written = api
        .patch(&dependency.name_any(), &params, &Patch::Merge(&patch))
        .await?;
    catch_up(&state.caches.dependency_resources, &written).await?;
    Ok(())
}

/// 409 when another dependency (not `except`) of `server` asks for the host port of
/// `exposure` (Docker could publish only one of them).
pub fn require_free_port(
    state: &AppState,
    namespace: &str,
    server: &str,
    except: Option<&str>,
    exposure: &DependencyExposure,
) -> ApiResult<()> {
    let taken = all_in(&state.caches.dependency_resources, namespace)
        .into_iter()
        .find(|other| {
            Some(other.name_any().as_str()) != except
                && other.spec.server_id == server
                && other
                    .spec
                    .exposure
                    .as_ref()
                    .is_some_and(|e| e.host_port == exposure.host_port)
        });
    match taken {
        None => Ok(()),
        Some(other) => Err(ApiError::conflict_code(
            "dependency_resource_host_port_conflict",
            format!(
                "dependency resource {} already publishes host port {} on server {server}",
                other.name_any(),
                exposure.host_port,
            ),
        )
        .with_detail("field", "hostPort")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::dependency_resource::{
        DependencyKind, DependencyResourceSpec, DependencyResourceStatus, managed_connection,
    };
    use berth_crds::resource::ResourceSpec;

    fn dependency(lifecycle: Option<DependencyLifecycleStatus>) -> DependencyResource {
        let spec: DependencyResourceSpec = serde_json::from_value(serde_json::json!({
            "kind": "postgres", "projectId": "prj-1", "environmentId": "env-1",
            "serverId": "srv-1", "name": "Orders DB",
        }))
        .unwrap();
        let mut dependency = DependencyResource::new("dep-1", spec);
        dependency.metadata.namespace = Some("org-a".into());
        dependency.status = Some(DependencyResourceStatus {
            lifecycle_status: lifecycle,
            connection: Some(managed_connection(
                DependencyKind::Postgres,
                "berth-dep-org-a-dep-1",
                "berth",
                "dep-1-connection",
            )),
            ..Default::default()
        });
        dependency
    }

    fn resource(name: &str, bindings: &[(&str, &str)]) -> Arc<Resource> {
        let spec: ResourceSpec = serde_json::from_value(serde_json::json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": name, "kind": "application",
        }))
        .unwrap();
        let mut resource = Resource::new(name, spec);
        resource.spec.dependency_bindings = bindings
            .iter()
            .map(|(target, dependency)| DependencyBinding {
                dependency_resource_id: (*dependency).into(),
                target_name: (*target).into(),
                scope: Default::default(),
                injection_mode: Default::default(),
            })
            .collect();
        Arc::new(resource)
    }

    #[test]
    fn a_summary_is_masked_and_names_every_binding_as_a_delete_blocker() {
        let resources = [
            resource(
                "web",
                &[("DATABASE_URL", "dep-1"), ("REPLICA_URL", "dep-1")],
            ),
            resource("worker", &[("CACHE_URL", "dep-2")]),
        ];
        let summary = summary(
            &dependency(Some(DependencyLifecycleStatus::Ready)),
            &resources,
        );
        let wire = berth_api::wire::to_value(&summary).unwrap();
        assert_eq!(wire["sourceMode"], "appaloft-managed");
        assert_eq!(wire["providerKey"], "berth-managed-postgres");
        assert_eq!(wire["slug"], "orders-db");
        assert_eq!(
            wire["bindingReadiness"],
            serde_json::json!({"status": "ready"})
        );
        assert_eq!(
            wire["connection"]["maskedConnection"],
            "postgres://berth:****@berth-dep-org-a-dep-1:5432/app\
             ?sslmode=verify-full&sslrootcert=/etc/berth/database-ca.crt"
        );
        assert_eq!(
            wire["deleteSafety"]["blockers"],
            serde_json::json!([{"kind": "resource-binding", "relatedEntityId": "web",
                "relatedEntityType": "resource", "count": 2,
                "bindingIds": ["DATABASE_URL", "REPLICA_URL"]}])
        );
    }

    #[test]
    fn a_binding_waits_for_a_provisioning_dependency_and_is_blocked_without_one() {
        let web = resource("web", &[("DATABASE_URL", "dep-1")]);
        let binding = &web.spec.dependency_bindings[0];
        let provisioning = dependency(None);
        let summary = binding_summary(&web, binding, Some(&provisioning));
        assert_eq!(
            summary.lifecycle_status,
            DependencyLifecycleStatus::Provisioning
        );
        assert_eq!(summary.snapshot_readiness.status, ReadinessStatus::Deferred);
        assert_eq!(summary.binding_readiness.status, ReadinessStatus::Blocked);
        assert_eq!(
            summary.target.secret_ref.as_deref(),
            Some("dep-1-connection")
        );
        let gone = binding_summary(&web, binding, None);
        assert_eq!(gone.lifecycle_status, DependencyLifecycleStatus::Deleted);
        assert_eq!(gone.snapshot_readiness.status, ReadinessStatus::Blocked);
        assert!(gone.kind.is_none());
    }
}
