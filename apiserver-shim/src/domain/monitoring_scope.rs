//! The scope of monitoring reads and threshold policies: its query parameters, and the check
//! that each id names an object the caller may see.

use crate::auth::Caller;
use crate::domain::objects::find_in;
use crate::domain::{environments, projects, servers};
use crate::error::ApiResult;
use crate::state::AppState;

/// The `scope.*` query parameters of every monitoring read and of threshold policies.
pub const SCOPE_PARAMS: [&str; 6] = [
    "scope.kind",
    "scope.serverId",
    "scope.projectId",
    "scope.environmentId",
    "scope.resourceId",
    "scope.deploymentId",
];

/// The query parameters of a read: the scope's and `own`.
pub fn with_scope_params(own: &[&'static str]) -> Vec<&'static str> {
    SCOPE_PARAMS.iter().chain(own).copied().collect()
}

/// The ids of a scope that must name objects the caller may see.
#[derive(Default)]
pub struct ScopeIds<'a> {
    pub server: Option<&'a str>,
    pub project: Option<&'a str>,
    pub environment: Option<&'a str>,
    pub resource: Option<&'a str>,
    /// Only thresholds check it: samples outlive the Deployment objects they name.
    pub deployment: Option<&'a str>,
}

/// Checks each id names an object of the caller's organization it may see (404 otherwise, as
/// for any other route): monitoring reads' filters and threshold policies' scopes.
pub fn check_scope_ids(state: &AppState, caller: &Caller, ids: ScopeIds) -> ApiResult<()> {
    if let Some(id) = ids.server {
        servers::lookup(state, caller, id)?;
    }
    if let Some(id) = ids.project {
        projects::lookup(state, caller, id)?;
    }
    if let Some(id) = ids.environment {
        environments::lookup(state, caller, id)?;
    }
    if let Some(id) = ids.resource {
        crate::domain::resource_access::lookup(state, caller, id)?;
    }
    if let Some(id) = ids.deployment {
        let namespace = &caller.organization()?.namespace;
        find_in(&state.caches.deployments, namespace, id, "deployment")?;
    }
    Ok(())
}
