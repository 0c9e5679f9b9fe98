//! Why an attempt could not be packaged (its source, build, pull or Compose file), as the
//! attempt's `lastError` says it.

use berth_crds::deployment::DeploymentErrorCode as Code;

/// Why the package phase failed; `code` and `message` go into the attempt's `lastError`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageFailure {
    pub code: Code,
    pub message: String,
}

pub fn failure(code: Code, message: impl Into<String>) -> PackageFailure {
    PackageFailure {
        code,
        message: message.into(),
    }
}
