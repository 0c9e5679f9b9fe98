//! Environments as the routes reach them: the caller's scoped lookups, the masked view of
//! their variables, the closed set of kinds, and whether a project and environment are open
//! to a change of what they hold.

use std::sync::Arc;

use berth_api::environments::MaskedVariable;
use berth_crds::environment::Environment;
use berth_crds::masking::{MASK, looks_secret};
use berth_crds::project::Project;
use berth_crds::variable::{PlainVariable, VariableExposure};
use kube::ResourceExt;

use crate::auth::{Caller, ScopeDimension};
use crate::domain::objects::{all_in, find_in};
use crate::domain::projects;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A variable as the API shows it: its value masked when it reads as a secret.
pub fn masked(variable: &PlainVariable) -> MaskedVariable {
    let secret = looks_secret(&variable.key, &variable.value);
    MaskedVariable {
        key: variable.key.clone(),
        value: if secret {
            MASK.to_string()
        } else {
            variable.value.clone()
        },
        scope: "environment".into(),
        exposure: match variable.exposure {
            VariableExposure::BuildTime => "build-time",
            VariableExposure::Runtime => "runtime",
        }
        .into(),
        is_secret: secret,
        kind: if secret { "secret" } else { "plain-config" }.into(),
    }
}

/// Whether a deploy token may see an environment: both it and its project must be in scope.
pub fn visible_to(caller: &Caller, environment: &Environment) -> bool {
    caller.sees(ScopeDimension::Environment, &environment.name_any())
        && caller.sees(ScopeDimension::Project, &environment.spec.project_id)
}

/// The caller's environments (optionally of one project), oldest first.
pub fn visible(
    state: &AppState,
    caller: &Caller,
    project: Option<&str>,
) -> ApiResult<Vec<Arc<Environment>>> {
    let organization = caller.organization()?;
    if let Some(project) = project {
        // A filter naming a project must name one the caller may use.
        caller.require_in_scope(ScopeDimension::Project, project)?;
        projects::lookup(state, caller, project)?;
    }
    let mut environments: Vec<_> = all_in(&state.caches.environments, &organization.namespace)
        .into_iter()
        .filter(|e| project.is_none_or(|p| e.spec.project_id == p))
        .filter(|e| visible_to(caller, e))
        .collect();
    environments.sort_by_key(|e| {
        (
            e.metadata.creation_timestamp.clone().map(|t| t.0),
            e.name_any(),
        )
    });
    Ok(environments)
}

/// An environment of the caller's organization that the caller may see, or 404.
pub fn lookup(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Arc<Environment>> {
    let organization = caller.organization()?;
    let environment = find_in(
        &state.caches.environments,
        &organization.namespace,
        id,
        "environment",
    )?;
    if !visible_to(caller, &environment) {
        return Err(ApiError::not_found("environment", id));
    }
    Ok(environment)
}

/// `kind` must be one of the closed set the CRD allows.
pub fn validate_kind(kind: &str) -> ApiResult<()> {
    Ok(berth_api::environments::check_kind("kind", kind)?)
}

/// Refuses a change of `what` (e.g. "storage volumes") in a project or environment that is
/// archived or locked: a 409 naming the field.
pub fn require_open(project: &Project, environment: &Environment, what: &str) -> ApiResult<()> {
    let refuse = |field: &str, id: String, why: &str| {
        Err(ApiError::conflict(format!(
            "{} {id} is {why}; its {what} cannot change",
            field.trim_end_matches("Id")
        ))
        .with_detail("field", field))
    };
    if project.spec.archived {
        return refuse("projectId", project.name_any(), "archived");
    }
    if environment.spec.archived {
        return refuse("environmentId", environment.name_any(), "archived");
    }
    if environment.spec.locked {
        return refuse("environmentId", environment.name_any(), "locked");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_variables_are_masked() {
        let variable = PlainVariable {
            key: "SESSION_SECRET".into(),
            value: "s3cr3t".into(),
            exposure: VariableExposure::BuildTime,
        };
        let shown = masked(&variable);
        assert_eq!(
            (shown.value.as_str(), shown.is_secret, shown.kind.as_str()),
            (MASK, true, "secret")
        );
        assert_eq!(shown.exposure, "build-time");
    }

    #[test]
    fn kinds_are_a_closed_set() {
        assert!(validate_kind("preview").is_ok());
        assert!(validate_kind("local").is_ok());
        let error = validate_kind("plain-config").unwrap_err();
        assert_eq!(error.body.details["allowed"].as_array().unwrap().len(), 7);
        assert!(validate_kind("Production").is_err());
        assert!(validate_kind("").is_err());
    }
}
