//! The status of a deployment attempt: a Deployment's `status.state` and what the REST API
//! reports for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Status of a deployment attempt.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeploymentState {
    Created,
    Planning,
    Planned,
    Running,
    CancelRequested,
    Succeeded,
    Failed,
    Canceled,
    RolledBack,
}

impl DeploymentState {
    /// Every status, in the order of the enum (a store asked status by status reads them all).
    pub const ALL: [Self; 9] = [
        Self::Created,
        Self::Planning,
        Self::Planned,
        Self::Running,
        Self::CancelRequested,
        Self::Succeeded,
        Self::Failed,
        Self::Canceled,
        Self::RolledBack,
    ];

    /// Whether the attempt has ended and will not change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::Canceled | Self::RolledBack
        )
    }
}
