//! Projects as the routes reach them: the caller's scoped lookup.

use berth_crds::project::Project;

use crate::auth::{Caller, ScopeDimension};
use crate::domain::objects::find_in;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A project of the caller's organization that the caller may see, or 404.
pub fn lookup(state: &AppState, caller: &Caller, id: &str) -> ApiResult<std::sync::Arc<Project>> {
    let organization = caller.organization()?;
    let project = find_in(
        &state.caches.projects,
        &organization.namespace,
        id,
        "project",
    )?;
    if !caller.sees(ScopeDimension::Project, id) {
        return Err(ApiError::not_found("project", id));
    }
    Ok(project)
}
