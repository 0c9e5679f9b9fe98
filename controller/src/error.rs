//! The controller's one error type.

use thiserror::Error;

#[derive(Error, Debug)]
pub enum Error {
    #[error("Kubernetes API request failed: {0}")]
    Kube(#[source] kube::Error),

    #[error("finalizer failed: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),

    #[error("invalid spec: {0}")]
    InvalidSpec(String),

    #[error("object has no {0}")]
    MissingObjectKey(&'static str),

    #[error("remote operation failed: {0}")]
    Remote(#[source] berth_remote::RemoteError),

    #[error("observation store failed: {0}")]
    ObservationStore(String),

    /// berth-shim did not run a Migration's step (unreachable, not configured, refused).
    #[error("{0}")]
    Shim(String),
}

impl From<berth_remote::RemoteError> for Error {
    fn from(error: berth_remote::RemoteError) -> Self {
        Self::Remote(error)
    }
}

impl From<kube::Error> for Error {
    fn from(error: kube::Error) -> Self {
        Self::Kube(error)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A stable label for the failures metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Self::Kube(_) => "kube",
            Self::Finalizer(_) => "finalizer",
            Self::InvalidSpec(_) => "invalid_spec",
            Self::MissingObjectKey(_) => "missing_object_key",
            Self::Remote(error) => error.metric_label(),
            Self::ObservationStore(_) => "observation_store",
            Self::Shim(_) => "shim_unavailable",
        }
    }

    /// The reason of the Warning Event a failed reconcile leaves on its object: the stable
    /// label in UpperCamelCase (`invalid_spec` → `InvalidSpec`), as Kubernetes reasons are.
    pub fn event_reason(&self) -> String {
        self.metric_label()
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                chars.next().map_or(String::new(), |first| {
                    first.to_ascii_uppercase().to_string() + chars.as_str()
                })
            })
            .collect()
    }

    /// A write refused because the object changed since it was read (HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Kube(kube::Error::Api(status)) if status.code == 409)
    }

    /// Errors that only a change of the object can fix; retrying is pointless.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::InvalidSpec(_) | Self::MissingObjectKey(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_reasons_are_the_stable_labels_in_camel_case() {
        assert_eq!(Error::InvalidSpec("x".into()).event_reason(), "InvalidSpec");
        assert_eq!(
            Error::MissingObjectKey("name").event_reason(),
            "MissingObjectKey"
        );
    }
}
