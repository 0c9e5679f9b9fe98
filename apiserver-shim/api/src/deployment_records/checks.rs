//! The field rules of retry, rollback and redeploy. The shim runs each after it found the
//! attempt or resource of the path (an unknown one is a 404 before any 422).

use super::{RedeployResource, RetryDeployment, RollbackDeployment};
use crate::limits::OBJECT_NAME_MAX;
use crate::validate::{Checked, optional_text};

/// Longest `readinessGeneratedAt` of a retry (a timestamp, as the readiness check wrote it).
pub const READINESS_GENERATED_AT_MAX: usize = 64;

impl RetryDeployment {
    pub fn validate(&self) -> Checked {
        optional_text(
            "readinessGeneratedAt",
            self.readiness_generated_at.as_ref(),
            READINESS_GENERATED_AT_MAX,
        )
    }
}

impl RollbackDeployment {
    pub fn validate(&self) -> Checked {
        optional_text(
            "rollbackCandidateDeploymentId",
            self.rollback_candidate_deployment_id.as_ref(),
            OBJECT_NAME_MAX,
        )
    }
}

impl RedeployResource {
    pub fn validate(&self) -> Checked {
        for (field, value) in [
            ("projectId", &self.project_id),
            ("environmentId", &self.environment_id),
            ("serverId", &self.server_id),
            ("destinationId", &self.destination_id),
            ("sourceDeploymentId", &self.source_deployment_id),
            ("readinessGeneratedAt", &self.readiness_generated_at),
        ] {
            optional_text(field, value.as_ref(), OBJECT_NAME_MAX)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_or_rollback_names_the_field_it_refuses() {
        assert!(RetryDeployment::default().validate().is_ok());
        let retry = RetryDeployment {
            readiness_generated_at: Some("t".repeat(READINESS_GENERATED_AT_MAX + 1)),
            ..Default::default()
        };
        assert_eq!(retry.validate().unwrap_err().field, "readinessGeneratedAt");
        assert!(RollbackDeployment::default().validate().is_ok());
        let rollback = RollbackDeployment {
            rollback_candidate_deployment_id: Some(String::new()),
            ..Default::default()
        };
        let error = rollback.validate().unwrap_err();
        assert_eq!(error.field, "rollbackCandidateDeploymentId");
    }

    #[test]
    fn a_redeploy_names_the_field_it_refuses() {
        assert!(RedeployResource::default().validate().is_ok());
        let long = Some("x".repeat(OBJECT_NAME_MAX + 1));
        for (body, field) in [
            (
                RedeployResource {
                    project_id: Some(" ".into()),
                    ..Default::default()
                },
                "projectId",
            ),
            (
                RedeployResource {
                    source_deployment_id: long.clone(),
                    ..Default::default()
                },
                "sourceDeploymentId",
            ),
            (
                RedeployResource {
                    readiness_generated_at: long,
                    ..Default::default()
                },
                "readinessGeneratedAt",
            ),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
    }
}
