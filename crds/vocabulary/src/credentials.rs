//! The kinds of SSH credential: an SshCredential's `spec.kind` and the REST API's.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Kind of SSH credential; the spec names only private keys.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SshCredentialKind {
    #[default]
    SshPrivateKey,
}
