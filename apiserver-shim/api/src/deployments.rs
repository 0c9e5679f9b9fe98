//! Spec §6, deployments started through the event stream.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartDeployment {
    /// The resource's project.
    pub project_id: String,
    /// The server to deploy to: the one the resource names.
    pub server_id: String,
    /// The resource's environment.
    pub environment_id: String,
    /// The resource to deploy (its current source is deployed).
    pub resource_id: String,
    /// Deployment destination on the server; the resource's when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_id: Option<String>,
}
