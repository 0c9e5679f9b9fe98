//! Preview environments as the routes reach them: the policy in force for a project or
//! resource ([`policies`]), a PreviewEnvironment as Appaloft's summary ([`summary`]), and the
//! removal of one, which REST and CI share ([`cleanup`]). The webhook writes previews; the
//! controller builds and removes what they make.

pub mod cleanup;
pub mod policies;
pub mod summary;

use std::sync::Arc;

use berth_crds::member::OrganizationRole;
use berth_crds::preview::PreviewEnvironment;

use crate::auth::{Caller, ScopeDimension};
use crate::domain::objects::find_in;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Whether the caller may see `preview`: a deploy token only within its project and resource
/// scope (an organization's members see all of its previews).
pub fn visible_to(caller: &Caller, preview: &PreviewEnvironment) -> bool {
    caller.sees(ScopeDimension::Project, &preview.spec.project_id)
        && caller.sees(ScopeDimension::Resource, &preview.spec.resource_id)
}

/// A preview of the caller's organization that the caller may see, or `None` (other
/// organizations' previews look the same as missing ones).
pub fn find(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<Option<Arc<PreviewEnvironment>>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let found = find_in(
        &state.caches.preview_environments,
        &organization.namespace,
        id,
        "preview environment",
    );
    Ok(found.ok().filter(|preview| visible_to(caller, preview)))
}

/// As [`find`], a missing preview a 404.
pub fn lookup(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<PreviewEnvironment>> {
    find(state, caller, id)?.ok_or_else(|| ApiError::not_found("preview environment", id))
}
