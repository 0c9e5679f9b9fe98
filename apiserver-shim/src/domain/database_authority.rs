//! The certificate authority an organization's managed PostgreSQL servers are issued their
//! certificates by (made by the controller with the first one): its certificate, served for
//! download so a client outside Berth can verify a database (`sslmode=verify-full`).

use berth_api::dependencies::DependencyCaCertificate;
use berth_crds::dependency_resource::{
    APP_CA_PATH, CA_CERT_KEY, DATABASE_CA_SECRET, DependencyKind, DependencyResource,
    DependencySource,
};
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The authority's certificate for `dependency`: 409 for one that is not a managed PostgreSQL,
/// or whose authority is not made yet.
pub async fn certificate_of(
    state: &AppState,
    dependency: &DependencyResource,
) -> ApiResult<DependencyCaCertificate> {
    let id = dependency.name_any();
    let spec = &dependency.spec;
    if (spec.source, spec.kind) != (DependencySource::Managed, DependencyKind::Postgres) {
        return Err(ApiError::conflict_code(
            "dependency_resource_tls_unavailable",
            format!(
                "dependency resource {id} is not a managed PostgreSQL: Berth issues TLS \
                 certificates to the PostgreSQL servers it runs only"
            ),
        ));
    }
    let namespace = dependency.namespace().unwrap_or_default();
    let secret = Api::<Secret>::namespaced(state.client.clone(), &namespace)
        .get_opt(DATABASE_CA_SECRET)
        .await?;
    let certificate = secret
        .and_then(|secret| secret.data?.remove(CA_CERT_KEY))
        .and_then(|value| String::from_utf8(value.0).ok())
        .ok_or_else(|| {
            ApiError::conflict_code(
                "dependency_resource_tls_unavailable",
                format!(
                    "the authority of {id}'s certificate is not made yet: it is made when the \
                     controller first starts the database"
                ),
            )
        })?;
    Ok(DependencyCaCertificate {
        dependency_resource_id: id,
        certificate_pem: certificate,
        secret_ref: DATABASE_CA_SECRET.to_string(),
        ca_path: APP_CA_PATH.to_string(),
    })
}
