//! Storage volumes over REST (Appaloft's routes and shapes): `POST /storage-volumes`,
//! `GET /storage-volumes[/{id}]` and `DELETE /storage-volumes/{id}`. A volume is a
//! StorageVolume object; reads come from the watch caches, the attachments from the
//! resources' `spec.storageAttachments`. Deleting one removes the object only: the data on
//! servers (the Docker volume, the bind-mounted directory) stays.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_api::common::IdResponse;
use berth_crds::backup_policy::SKIP_FINAL_BACKUP_ANNOTATION;
use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_crds::storage_volume::{StorageVolume, StorageVolumeSpec};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::{Caller, ScopeDimension};
use crate::cache::{wait_deleted, wait_gone};
use crate::domain::fields::{confirm, slugify};
use crate::domain::objects::all_in;
use crate::domain::storage_volumes::{attached_at, lookup, visible_to};
use crate::domain::time::created_at;
use crate::domain::{environments, projects};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};

/// What an archived or locked project or environment refuses to change, in its 409.
const WHAT: &str = "storage volumes";
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::storage::{
    CreateStorageVolume, DeleteStorageVolume, LIST_SCHEMA, SHOW_SCHEMA, StorageVolumeAttachment,
    StorageVolumeList, StorageVolumeShow, StorageVolumeSummary,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateStorageVolume, IdResponse, _, _>(
            "/storage-volumes",
            "Create a storage volume: a named Docker volume or a bind-mounted server directory (201)",
            create,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::get::<StorageVolumeList, _, _>(
            "/storage-volumes",
            "List storage volumes with their attachments (projectId, environmentId filters)",
            list,
        ),
        Endpoint::get::<StorageVolumeShow, _, _>(
            "/storage-volumes/{storageVolumeId}",
            "Show a storage volume and the resources it is attached to",
            show,
        ),
        Endpoint::delete::<DeleteStorageVolume, IdResponse, _, _>(
            "/storage-volumes/{storageVolumeId}",
            "Delete an unattached storage volume (409 while attached); its data on servers is \
             kept. One a backup policy covers is backed up once more first (the answer does not \
             wait for that), unless skipFinalBackupConfirmation repeats its name",
            delete,
        ),
    ]
}

/// `mountMode` of every attachment: Berth mounts volumes read-write.
const MOUNT_MODE: &str = "read-write";

/// Every attachment of volume `id` among `resources`: (resource, attachment).
fn attachments_of<'a>(
    resources: &'a [Arc<Resource>],
    id: &'a str,
) -> impl Iterator<Item = (&'a Resource, &'a berth_crds::resource::StorageAttachment)> + 'a {
    resources.iter().flat_map(move |resource| {
        resource
            .spec
            .storage_attachments
            .iter()
            .filter(move |a| a.storage_volume_id == id)
            .map(move |a| (resource.as_ref(), a))
    })
}

/// Appaloft's summary of `volume`, its attachments read from `resources` (its namespace's).
pub fn summary(volume: &StorageVolume, resources: &[Arc<Resource>]) -> StorageVolumeSummary {
    let id = volume.name_any();
    let attachments: Vec<StorageVolumeAttachment> = attachments_of(resources, &id)
        .map(|(resource, attachment)| StorageVolumeAttachment {
            attachment_id: attachment.attachment_id.clone(),
            resource_id: resource.name_any(),
            resource_name: Some(resource.spec.name.clone()),
            resource_slug: Some(resource.host_slug()),
            destination_path: attachment.destination_path.clone(),
            mount_mode: MOUNT_MODE.into(),
            attached_at: attached_at(resource, attachment),
        })
        .collect();
    let spec = &volume.spec;
    StorageVolumeSummary {
        id,
        project_id: spec.project_id.clone(),
        environment_id: spec.environment_id.clone(),
        name: spec.name.clone(),
        slug: slugify(&spec.name),
        kind: spec.kind,
        source_path: spec.source_path.clone(),
        description: spec.description.clone(),
        // Appaloft's `active | deleted`: `deleted` once deletion began (kubectl's may wait
        // until the resources attaching it detach it).
        lifecycle_status: if volume.metadata.deletion_timestamp.is_some() {
            "deleted"
        } else {
            "active"
        }
        .into(),
        attachment_count: attachments.len(),
        attachments,
        created_at: created_at(&volume.metadata),
    }
}

/// The project and environment a volume goes in: both visible, the environment the
/// project's, neither archived nor locked.
fn placement(
    state: &AppState,
    caller: &Caller,
    project_id: &str,
    environment_id: &str,
) -> ApiResult<()> {
    caller.require_in_scope(ScopeDimension::Project, project_id)?;
    caller.require_in_scope(ScopeDimension::Environment, environment_id)?;
    let project = projects::lookup(state, caller, project_id)?;
    let environment = environments::lookup(state, caller, environment_id)?;
    if environment.spec.project_id != project_id {
        return Err(ApiError::validation(
            "environmentId",
            format!("environment {environment_id} is not an environment of project {project_id}"),
        ));
    }
    environments::require_open(&project, &environment, WHAT)
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateStorageVolume>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    body.validate()?;
    placement(&state, &caller, &body.project_id, &body.environment_id)?;
    let name = body.name.trim().to_string();
    let slug = slugify(&name);
    let namespace = organization.namespace.clone();
    let taken = all_in(&state.caches.storage_volumes, &namespace)
        .into_iter()
        .find(|v| v.spec.environment_id == body.environment_id && slugify(&v.spec.name) == slug);
    if let Some(taken) = taken {
        return Err(ApiError::conflict_code(
            "storage_volume_slug_conflict",
            format!(
                "environment {} already has a storage volume named {slug} ({})",
                body.environment_id,
                taken.name_any()
            ),
        )
        .with_detail("field", "name")
        .with_detail("conflictingStorageVolumeId", taken.name_any()));
    }
    let id = new_id("vol");
    let volume = StorageVolume::new(
        &id,
        StorageVolumeSpec {
            project_id: body.project_id,
            environment_id: body.environment_id,
            name,
            kind: body.kind,
            source_path: body.source_path,
            description: body.description,
        },
    );
    let api = Api::<StorageVolume>::namespaced(state.client.clone(), &namespace);
    apply(&api, &state.caches.storage_volumes, Some(&caller), volume).await?;
    tracing::info!(volume = %id, "storage volume created");
    Ok((StatusCode::CREATED, Json(IdResponse { id })))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<StorageVolumeList>> {
    known_params(&query, &["projectId", "environmentId"])?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    // A filter must name a project or environment the caller may use.
    let project = query.string("projectId")?;
    if let Some(project) = project {
        projects::lookup(&state, &caller, project)?;
    }
    let environment = query.string("environmentId")?;
    if let Some(environment) = environment {
        environments::lookup(&state, &caller, environment)?;
    }
    let namespace = &organization.namespace;
    let mut volumes: Vec<_> = all_in(&state.caches.storage_volumes, namespace)
        .into_iter()
        .filter(|v| visible_to(&caller, v))
        .filter(|v| project.is_none_or(|p| v.spec.project_id == p))
        .filter(|v| environment.is_none_or(|e| v.spec.environment_id == e))
        .collect();
    volumes.sort_by_key(|v| {
        (
            v.metadata.creation_timestamp.clone().map(|t| t.0),
            v.name_any(),
        )
    });
    let resources = all_in(&state.caches.resources, namespace);
    Ok(Json(StorageVolumeList {
        schema_version: LIST_SCHEMA.into(),
        items: volumes.iter().map(|v| summary(v, &resources)).collect(),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<StorageVolumeShow>> {
    let volume = lookup(&state, &caller, &id)?;
    let resources = all_in(
        &state.caches.resources,
        &volume.namespace().unwrap_or_default(),
    );
    Ok(Json(StorageVolumeShow {
        schema_version: SHOW_SCHEMA.into(),
        storage_volume: summary(&volume, &resources),
        generated_at: Timestamp::now().to_string(),
    }))
}

/// The 409 of a volume still attached, naming every resource that attaches it.
fn still_attached(id: &str, resources: &[Arc<Resource>]) -> Option<ApiError> {
    let mut attaching: Vec<String> = attachments_of(resources, id)
        .map(|(resource, _)| resource.name_any())
        .collect();
    attaching.dedup();
    if attaching.is_empty() {
        return None;
    }
    let error = ApiError::conflict_code(
        "storage_volume_delete_blocked",
        format!(
            "storage volume {id} is attached to resource {}: detach it first",
            attaching.join(", ")
        ),
    )
    .with_detail("deletionBlockers", "resource-attachment")
    .with_detail("resourceIds", attaching);
    Some(error)
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteStorageVolume>,
) -> ApiResult<Json<IdResponse>> {
    let volume = lookup(&state, &caller, &id)?;
    if let Some(confirmation) = &body.confirmation {
        let given = confirmation.storage_volume_id.as_deref();
        confirm(given, &id, "storageVolumeId", "storage volume")?;
    }
    let namespace = volume.namespace().unwrap_or_default();
    if let (Ok(project), Ok(environment)) = (
        projects::lookup(&state, &caller, &volume.spec.project_id),
        environments::lookup(&state, &caller, &volume.spec.environment_id),
    ) {
        environments::require_open(&project, &environment, WHAT)?;
    }
    let skip_final_backup = confirm_skip(&volume, &body)?;
    let resources = all_in(&state.caches.resources, &namespace);
    if let Some(error) = still_attached(&id, &resources) {
        return Err(error);
    }
    let api = Api::<StorageVolume>::namespaced(state.client.clone(), &namespace);
    if skip_final_backup {
        mark_skip_final_backup(&api, &volume).await?;
    }
    let covered = all_in(&state.caches.volume_backup_policies, &namespace)
        .iter()
        .any(|p| p.spec.storage_volume_id == id);
    let marked =
        crate::write::delete(&api, volume.as_ref(), &DeleteParams::default(), &caller).await?;
    wait_deleted(&state.caches.storage_volumes, &volume, marked).await?;
    if covered && !skip_final_backup {
        tracing::info!(volume = %id, "storage volume deleting after its final backup");
        return Ok(Json(IdResponse { id }));
    }
    // The controller's finalizer holds an unattached volume no policy covers only for a
    // moment; the answer waits for that, and a read after it finds none.
    if wait_gone(&state.caches.storage_volumes, volume.as_ref())
        .await
        .is_err()
    {
        tracing::warn!(volume = %id, "storage volume marked deleted; the controller still holds it");
    }
    tracing::info!(volume = %id, "storage volume deleted; its data on servers is kept");
    Ok(Json(IdResponse { id }))
}

/// Whether the request confirms deleting without a final backup (it must repeat the volume's
/// name); a 422 when it was typed wrong.
fn confirm_skip(volume: &StorageVolume, body: &DeleteStorageVolume) -> ApiResult<bool> {
    let name = &volume.spec.name;
    match body.skip_final_backup_confirmation.as_deref() {
        None => Ok(false),
        Some(typed) if typed == name => Ok(true),
        Some(_) => Err(ApiError::validation(
            "skipFinalBackupConfirmation",
            format!(
                "skipFinalBackupConfirmation must repeat the volume's name ({name}) to delete \
                 it without a final backup; leave it out to take one"
            ),
        )),
    }
}

/// Lets the controller remove the volume without its final backup.
async fn mark_skip_final_backup(api: &Api<StorageVolume>, volume: &StorageVolume) -> ApiResult<()> {
    let id = volume.name_any();
    let patch =
        serde_json::json!({"metadata": {"annotations": {SKIP_FINAL_BACKUP_ANNOTATION: id}}});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    api.patch(&id, &params, &Patch::Merge(&patch)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::resource::{ResourceSpec, StorageAttachment};

    fn volume(kind: &str, source_path: Option<&str>) -> StorageVolume {
        let spec: StorageVolumeSpec = serde_json::from_value(serde_json::json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": "Uploads Cache",
            "kind": kind, "sourcePath": source_path,
        }))
        .unwrap();
        let mut volume = StorageVolume::new("vol-1", spec);
        volume.metadata.namespace = Some("org-a".into());
        volume
    }

    fn resource(name: &str, volumes: &[&str]) -> Arc<Resource> {
        let spec: ResourceSpec = serde_json::from_value(serde_json::json!({
            "projectId": "prj-1", "environmentId": "env-1", "name": name.to_uppercase(),
            "kind": "application",
        }))
        .unwrap();
        let mut resource = Resource::new(name, spec);
        resource.spec.storage_attachments = volumes
            .iter()
            .enumerate()
            .map(|(i, v)| StorageAttachment {
                attachment_id: format!("att-{name}-{i}"),
                storage_volume_id: (*v).into(),
                destination_path: format!("/data/{i}"),
                attached_at: None,
            })
            .collect();
        Arc::new(resource)
    }

    #[test]
    fn a_summary_lists_the_attachments_without_nulls() {
        let resources = [resource("web", &["vol-1"]), resource("worker", &["vol-2"])];
        let summary = summary(&volume("named-volume", None), &resources);
        assert_eq!(
            (summary.slug.as_str(), summary.attachment_count),
            ("uploads-cache", 1)
        );
        let wire = berth_api::wire::to_value(&summary).unwrap();
        assert_eq!(wire["kind"], "named-volume");
        assert_eq!(wire["attachments"][0]["resourceId"], "web");
        assert_eq!(wire["attachments"][0]["resourceName"], "WEB");
        assert_eq!(wire["attachments"][0]["mountMode"], "read-write");
        assert!(wire.get("sourcePath").is_none() && wire.get("description").is_none());
        let bind = summary_of_bind();
        assert_eq!(bind["sourcePath"], "/srv/data");
    }

    fn summary_of_bind() -> serde_json::Value {
        berth_api::wire::to_value(&summary(&volume("bind-mount", Some("/srv/data")), &[])).unwrap()
    }

    #[test]
    fn deleting_an_attached_volume_names_every_resource_attaching_it() {
        let resources = [
            resource("web", &["vol-1", "vol-1"]),
            resource("api", &["vol-1"]),
            resource("worker", &["vol-2"]),
        ];
        let error = still_attached("vol-1", &resources).unwrap();
        assert_eq!(error.status, StatusCode::CONFLICT);
        assert!(
            error.body.message.contains("web, api"),
            "{}",
            error.body.message
        );
        assert_eq!(
            error.body.details["resourceIds"],
            serde_json::json!(["web", "api"])
        );
        assert!(still_attached("vol-3", &resources).is_none());
    }
}
