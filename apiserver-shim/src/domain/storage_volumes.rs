//! Storage volumes as the routes reach them: the caller's scoped lookup, which volume a
//! Resource may attach, and when it did.

use std::sync::Arc;

use berth_crds::member::OrganizationRole;
use berth_crds::resource::Resource;
use berth_crds::storage_volume::StorageVolume;

use crate::auth::{Caller, ScopeDimension};
use crate::domain::objects::find_in;
use crate::domain::time::created_at;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Whether a deploy token may see a volume: its project and environment must be in scope.
pub fn visible_to(caller: &Caller, volume: &StorageVolume) -> bool {
    caller.sees(ScopeDimension::Project, &volume.spec.project_id)
        && caller.sees(ScopeDimension::Environment, &volume.spec.environment_id)
}

/// A volume of the caller's organization the caller may see, or 404 (another organization's
/// volume looks the same as a missing one).
pub fn lookup(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<StorageVolume>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let volume = find_in(
        &state.caches.storage_volumes,
        &organization.namespace,
        id,
        "storage volume",
    )?;
    if !visible_to(caller, &volume) {
        return Err(ApiError::not_found("storage volume", id));
    }
    Ok(volume)
}

/// The volume a resource may attach: one of its organization, project and environment.
pub fn attachable(
    state: &AppState,
    caller: &Caller,
    resource: &Resource,
    id: &str,
) -> ApiResult<Arc<StorageVolume>> {
    let volume =
        lookup(state, caller, id).map_err(|error| error.with_detail("field", "storageVolumeId"))?;
    let (spec, wanted) = (&volume.spec, &resource.spec);
    if spec.project_id != wanted.project_id || spec.environment_id != wanted.environment_id {
        return Err(ApiError::validation(
            "storageVolumeId",
            format!(
                "storage volume {id} belongs to environment {} of project {}; a resource attaches \
                 volumes of its own environment ({})",
                spec.environment_id, spec.project_id, wanted.environment_id
            ),
        ));
    }
    Ok(volume)
}

/// When an attachment was made: recorded by the REST API, else the resource's creation.
pub fn attached_at(
    resource: &Resource,
    attachment: &berth_crds::resource::StorageAttachment,
) -> String {
    attachment
        .attached_at
        .as_ref()
        .map(crate::domain::time::timestamp)
        .unwrap_or_else(|| created_at(&resource.metadata))
}
