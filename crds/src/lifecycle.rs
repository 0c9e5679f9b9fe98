//! Lifecycle values shared by archivable kinds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Lifecycle of an archivable object (projects, environments).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum LifecycleStatus {
    Active,
    Archived,
}

impl LifecycleStatus {
    /// The lifecycle an object's `archived` flag asks for.
    pub fn from_archived(archived: bool) -> Self {
        if archived {
            Self::Archived
        } else {
            Self::Active
        }
    }

    /// The spelling used in the REST API and in status.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Archived => "archived",
        }
    }
}
