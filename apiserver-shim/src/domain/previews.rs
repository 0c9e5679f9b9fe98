//! Preview environments as the routes reach them: the policy in force for a project or
//! resource ([`policies`]), a PreviewEnvironment as Appaloft's summary ([`summary`]), the
//! removal of one, which REST and CI share ([`cleanup`]), the check of what is left of previews
//! that are gone ([`leftovers`]), the write of one, which the webhook
//! and CI share ([`write`]), CI's preview of a commit ([`ci`]), and what a resource read's
//! `previewEnvironmentId` names ([`read_subject`]). The controller builds and removes what
//! previews make.

pub mod ci;
pub mod cleanup;
pub mod leftovers;
pub mod policies;
pub mod summary;
pub mod write;

use std::sync::Arc;

use berth_crds::environment::Environment;
use berth_crds::member::OrganizationRole;
use berth_crds::preview::{PREVIEW_LABEL, PreviewEnvironment};
use berth_crds::resource::Resource;
use kube::ResourceExt;

use crate::auth::{Caller, ScopeDimension};
use crate::domain::environments;
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

/// The query parameter of resource reads that names a preview.
pub const PREVIEW_PARAM: &str = "previewEnvironmentId";

/// What a resource read's `previewEnvironmentId` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreviewTarget {
    /// A preview of the resource: the read is about its copy (`status.previewResourceId`).
    Copy { preview: String, resource: String },
    /// An environment of kind `preview` of the resource's project (the read is about the
    /// resource itself; its variables are that environment's).
    Environment(String),
}

fn unknown(id: &str) -> ApiError {
    ApiError::not_found("preview environment", id).with_detail("field", PREVIEW_PARAM)
}

/// What `id` names for a read of `resource`, given the preview of that id the caller may see
/// (or the one whose environment `id` is) and the environment of that id: a preview of
/// `resource` whose copy exists (409 while the controller has not made it), or an environment
/// of kind `preview` of its project; anything else a 404 naming `previewEnvironmentId`.
pub fn target(
    resource: &Resource,
    id: &str,
    preview: Option<&PreviewEnvironment>,
    environment: Option<&Environment>,
) -> ApiResult<PreviewTarget> {
    if let Some(preview) = preview {
        if preview.spec.resource_id != resource.name_any() {
            return Err(unknown(id));
        }
        let made = preview
            .status
            .as_ref()
            .and_then(|s| s.preview_resource_id.clone());
        return match made {
            Some(copy) => Ok(PreviewTarget::Copy {
                preview: preview.name_any(),
                resource: copy,
            }),
            None => Err(not_made(&preview.name_any())),
        };
    }
    match environment {
        Some(environment)
            if environment.spec.kind == "preview"
                && environment.spec.project_id == resource.spec.project_id =>
        {
            Ok(PreviewTarget::Environment(environment.name_any()))
        }
        _ => Err(unknown(id)),
    }
}

fn not_made(preview: &str) -> ApiError {
    ApiError::conflict(format!(
        "preview {preview} has no resource yet: the controller has not made it (see \
         GET /preview-environments/{preview})"
    ))
    .with_detail("field", PREVIEW_PARAM)
}

/// What a resource read answers about: the resource (or a preview's copy of it), and the
/// environment whose variables apply.
#[derive(Clone, Debug)]
pub struct ReadSubject {
    pub resource: Arc<Resource>,
    pub environment_id: String,
}

/// The subject of a read of `resource` (which the caller may see) with `previewEnvironmentId`
/// `preview_id`: the resource itself without one; with one, see [`target`]. A preview's
/// environment's id names the preview. The copy is read without the caller's resource scope:
/// a deploy token of the resource sees its previews.
pub fn read_subject(
    state: &AppState,
    caller: &Caller,
    resource: Arc<Resource>,
    preview_id: Option<&str>,
) -> ApiResult<ReadSubject> {
    let Some(id) = preview_id else {
        let environment_id = resource.spec.environment_id.clone();
        return Ok(ReadSubject {
            resource,
            environment_id,
        });
    };
    let mut preview = find(state, caller, id)?;
    let environment = match preview {
        Some(_) => None,
        None => environments::lookup(state, caller, id).ok(),
    };
    if let Some(of) = environment
        .as_ref()
        .and_then(|e| e.labels().get(PREVIEW_LABEL))
    {
        preview = find(state, caller, of)?;
    }
    match target(&resource, id, preview.as_deref(), environment.as_deref())? {
        PreviewTarget::Environment(environment_id) => Ok(ReadSubject {
            resource,
            environment_id,
        }),
        PreviewTarget::Copy {
            preview,
            resource: copy,
        } => {
            let namespace = resource.namespace().unwrap_or_default();
            let copy = find_in(&state.caches.resources, &namespace, &copy, "resource")
                .ok()
                .filter(|c| c.labels().get(PREVIEW_LABEL) == Some(&preview))
                .ok_or_else(|| not_made(&preview))?;
            let environment_id = copy.spec.environment_id.clone();
            Ok(ReadSubject {
                resource: copy,
                environment_id,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::preview::PreviewEnvironmentStatus;
    use serde_json::json;

    fn resource(name: &str) -> Resource {
        let spec = json!({
            "projectId": "shop", "environmentId": "production", "serverId": "local",
            "name": name, "kind": "application",
        });
        Resource::new(name, serde_json::from_value(spec).unwrap())
    }

    fn preview(of: &str, copy: Option<&str>) -> PreviewEnvironment {
        let spec = json!({
            "projectId": "shop", "resourceId": of, "pushedAt": "2030-01-01T00:00:00Z",
            "source": {
                "provider": "api", "repositoryFullName": "acme/shop",
                "headRepositoryFullName": "acme/shop",
                "headRepositoryUrl": "https://github.com/acme/shop.git",
                "pullRequestNumber": 7, "baseRef": "main", "headRef": "main",
                "headSha": "a".repeat(40),
            },
        });
        let mut preview =
            PreviewEnvironment::new(&format!("{of}-pr-7"), serde_json::from_value(spec).unwrap());
        preview.status = Some(PreviewEnvironmentStatus {
            preview_resource_id: copy.map(str::to_string),
            ..Default::default()
        });
        preview
    }

    fn environment(name: &str, project: &str, kind: &str) -> Environment {
        let spec = json!({ "projectId": project, "name": name, "kind": kind });
        Environment::new(name, serde_json::from_value(spec).unwrap())
    }

    fn status_and_field(error: ApiError) -> (u16, String) {
        let field = error.body.details["field"].as_str().unwrap_or_default();
        (error.status.as_u16(), field.to_string())
    }

    #[test]
    fn a_preview_of_the_resource_names_its_copy() {
        let web = resource("web");
        let made = preview("web", Some("web-pr-7"));
        assert_eq!(
            target(&web, "web-pr-7", Some(&made), None).unwrap(),
            PreviewTarget::Copy {
                preview: "web-pr-7".into(),
                resource: "web-pr-7".into()
            }
        );
        let waiting = preview("web", None);
        let error = target(&web, "web-pr-7", Some(&waiting), None).unwrap_err();
        assert_eq!(status_and_field(error), (409, PREVIEW_PARAM.into()));
        let other = preview("api", Some("api-pr-7"));
        let error = target(&web, "api-pr-7", Some(&other), None).unwrap_err();
        assert_eq!(status_and_field(error), (404, PREVIEW_PARAM.into()));
    }

    #[test]
    fn an_environment_counts_only_when_it_is_a_preview_of_the_project() {
        let web = resource("web");
        let review = environment("review", "shop", "preview");
        assert_eq!(
            target(&web, "review", None, Some(&review)).unwrap(),
            PreviewTarget::Environment("review".into())
        );
        for environment in [
            environment("staging", "shop", "staging"),
            environment("review", "other", "preview"),
        ] {
            let error = target(&web, "x", None, Some(&environment)).unwrap_err();
            assert_eq!(status_and_field(error), (404, PREVIEW_PARAM.into()));
        }
        let error = target(&web, "nothing", None, None).unwrap_err();
        assert_eq!(status_and_field(error), (404, PREVIEW_PARAM.into()));
    }
}
