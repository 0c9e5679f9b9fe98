//! Writing a PreviewEnvironment, which the webhook of a pull request and CI (`POST
//! /deployments` with `preview`) share: by server-side apply, labelled with the resource it
//! previews (what the controller and the cleanup lists select by), noting who wrote it.

use berth_crds::preview::{PREVIEW_RESOURCE_LABEL, PreviewEnvironment, PreviewEnvironmentSpec};
use berth_crds::{MANAGED_LABEL, UPDATED_BY_ID, UPDATED_BY_KIND};
use kube::{Api, ResourceExt};

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::write::apply;

/// Who writes a preview.
#[derive(Clone, Copy)]
pub enum Writer<'a> {
    /// A forge's pull-request webhook (`github`, `gitlab`, `gitea`).
    Webhook(&'a str),
    /// A caller of the REST API (CI with a deploy token, or a member).
    Caller(&'a Caller),
}

impl Writer<'_> {
    /// `(updated-by kind, updated-by id)`.
    fn actor(self) -> (String, String) {
        match self {
            Writer::Webhook(provider) => ("system".into(), format!("webhook:{provider}")),
            Writer::Caller(caller) => {
                let (kind, id) = caller.actor();
                (kind.into(), id.into())
            }
        }
    }
}

/// Creates or updates (server-side apply) the preview `name` in `namespace` with `spec`.
pub async fn write(
    state: &AppState,
    namespace: &str,
    name: &str,
    spec: PreviewEnvironmentSpec,
    writer: Writer<'_>,
) -> ApiResult<PreviewEnvironment> {
    let api = Api::<PreviewEnvironment>::namespaced(state.client.clone(), namespace);
    let mut preview = PreviewEnvironment::new(name, spec);
    let (kind, id) = writer.actor();
    stamp(&mut preview, &kind, &id);
    apply(&api, &state.caches.preview_environments, None, preview).await
}

/// Labels a preview with its resource and managed-by, and notes its writer.
fn stamp(preview: &mut PreviewEnvironment, kind: &str, id: &str) {
    let resource_id = preview.spec.resource_id.clone();
    let labels = preview.labels_mut();
    labels.insert(PREVIEW_RESOURCE_LABEL.into(), resource_id);
    labels.insert(MANAGED_LABEL.into(), "true".into());
    let annotations = preview.annotations_mut();
    annotations.insert(UPDATED_BY_KIND.into(), kind.into());
    annotations.insert(UPDATED_BY_ID.into(), id.into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_preview_is_labelled_with_its_resource_and_writer() {
        let spec = json!({
            "projectId": "shop", "resourceId": "web", "withSecrets": true,
            "pushedAt": "2030-01-01T00:00:00Z",
            "source": {
                "provider": "api", "repositoryFullName": "acme/shop",
                "headRepositoryFullName": "acme/shop",
                "headRepositoryUrl": "https://github.com/acme/shop.git",
                "pullRequestNumber": 7, "baseRef": "main", "headRef": "main",
                "headSha": "a".repeat(40),
            },
        });
        let mut preview =
            PreviewEnvironment::new("web-pr-7", serde_json::from_value(spec).unwrap());
        let (kind, id) = Writer::Webhook("github").actor();
        stamp(&mut preview, &kind, &id);
        assert_eq!(preview.labels()[PREVIEW_RESOURCE_LABEL], "web");
        assert_eq!(preview.labels()[MANAGED_LABEL], "true");
        assert_eq!(preview.annotations()[UPDATED_BY_KIND], "system");
        assert_eq!(preview.annotations()[UPDATED_BY_ID], "webhook:github");
    }
}
