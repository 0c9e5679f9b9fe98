//! What a deploy token may act on: a DeployToken's spec and the REST API's token record.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The six scope arrays of a deploy token (spec §2.2).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeployTokenScope {
    /// Ids of the deployment targets (servers) the token may deploy to.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub deployment_target_ids: Vec<String>,
    /// Ids of the environments the token may act on.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub environment_ids: Vec<String>,
    /// Ids of the projects the token may act on.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub project_ids: Vec<String>,
    /// Repositories (`owner/name`) the token may be used from.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub repository_full_names: Vec<String>,
    /// Ids of the resources the token may act on.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub resource_ids: Vec<String>,
    /// Workflow commands the token may run, e.g. `source-link-deploy`, `preview-cleanup`.
    #[serde(default)]
    #[schemars(inner(length(min = 1)))]
    pub workflow_commands: Vec<String>,
}
