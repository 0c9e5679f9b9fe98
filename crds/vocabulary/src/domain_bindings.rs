//! Domain bindings' vocabulary, shared by the DomainBinding CRD and the REST request that
//! creates one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What plain HTTP does for a host name served over TLS.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HttpPolicy {
    #[default]
    Redirect,
    Serve,
}
