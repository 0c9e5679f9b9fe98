//! Spec §4.8 `POST /certificates/issue-or-renew`, plus listing and showing domain bindings and
//! certificates (beyond the spec: the CLI and the console need them). Issuance itself is
//! berth-controller's: the shim records the request on the Certificate (an attempt id in an
//! annotation) and answers at once. Idempotent by `idempotencyKey`: the attempt id is derived
//! from it, so repeats, even concurrent ones, name one attempt. No key material is read here.

use axum::extract::{Path, State};
use berth_crds::certificate::{
    ACME_PROVIDER, Certificate, CertificateSpec, IDEMPOTENCY_KEY_ANNOTATION,
    REQUESTED_ATTEMPT_ANNOTATION,
};
use berth_crds::condition::{Condition, READY, is_true};
use berth_crds::domain_binding::DomainBinding;
use berth_crds::member::OrganizationRole;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use sha2::{Digest, Sha256};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::objects::{all_in, find_in};
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::{AppState, FIELD_MANAGER};

/// Annotation keeping the caller's causation id of the latest request.
const CAUSATION_ANNOTATION: &str = "berth.dev/causation-id";

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<IssueOrRenew, IssueResult, _, _>(
            "/certificates/issue-or-renew",
            "Issue or renew the certificate of a domain binding (idempotent by idempotencyKey)",
            issue_or_renew,
        ),
        Endpoint::get::<CertificateList, _, _>(
            "/certificates",
            "List certificates",
            list_certificates,
        ),
        Endpoint::get::<CertificateView, _, _>(
            "/certificates/{certificateId}",
            "Show a certificate",
            show_certificate,
        ),
        Endpoint::get::<DomainBindingList, _, _>(
            "/domain-bindings",
            "List domain bindings",
            list_bindings,
        ),
        Endpoint::get::<DomainBindingView, _, _>(
            "/domain-bindings/{domainBindingId}",
            "Show a domain binding",
            show_binding,
        ),
    ]
}

pub use berth_api::certificates::{
    CertificateList, CertificateView, ConditionView, DomainBindingList, DomainBindingView,
    IssueOrRenew, IssueResult,
};
use berth_api::certificates::{HTTP_01, check_object_name};

fn conditions(conditions: &[Condition]) -> Vec<ConditionView> {
    conditions
        .iter()
        .map(|c| ConditionView {
            type_: c.type_.clone(),
            status: format!("{:?}", c.status),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: timestamp(&c.last_transition_time),
        })
        .collect()
}

/// An object name of 1..=253 lowercase letters, digits, dashes and dots (berth-api's rule).
fn object_name(field: &str, value: &str) -> Result<(), ApiError> {
    Ok(check_object_name(field, value)?)
}

/// The attempt an idempotency key names, the same for every repeat in the organization.
fn attempt_for_key(namespace: &str, certificate: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("{namespace}/{certificate}/{key}").as_bytes());
    format!("att-{}", &hex::encode(digest)[..12])
}

async fn issue_or_renew(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<IssueOrRenew>,
) -> ApiResult<Json<IssueResult>> {
    body.validate()?;
    let organization = caller.require_role(OrganizationRole::Member)?;
    let namespace = organization.namespace.clone();
    let bindings = Api::<DomainBinding>::namespaced(state.client.clone(), &namespace);
    let binding = bindings
        .get_opt(&body.domain_binding_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found("domain binding", &body.domain_binding_id)
                .with_detail("field", "domainBindingId")
        })?;
    let certificate_id = body
        .certificate_id
        .clone()
        .unwrap_or_else(|| binding.name_any());
    let certificates = Api::<Certificate>::namespaced(state.client.clone(), &namespace);
    let existing = certificates.get_opt(&certificate_id).await?;
    if let Some(existing) = &existing
        && let Some(attempt_id) = repeated_attempt(existing, &binding, &certificate_id, &body)?
    {
        return Ok(Json(IssueResult {
            certificate_id,
            attempt_id,
        }));
    }
    let attempt_id = new_attempt_id(&namespace, &certificate_id, &body);
    let certificate = requested_certificate(
        &binding,
        &certificate_id,
        &attempt_id,
        &body,
        existing.as_ref(),
    );
    apply_certificate(&certificates, &certificate_id, &certificate).await?;
    Ok(Json(IssueResult {
        certificate_id,
        attempt_id,
    }))
}

/// The attempt an `existing` certificate already started for this request (a repeat of its
/// latest request, by idempotency key); a conflict when it belongs to another binding.
fn repeated_attempt(
    existing: &Certificate,
    binding: &DomainBinding,
    certificate_id: &str,
    body: &IssueOrRenew,
) -> Result<Option<String>, ApiError> {
    if existing.spec.domain_binding_id != binding.name_any() {
        return Err(ApiError::conflict(format!(
            "certificate {certificate_id} belongs to domain binding {}",
            existing.spec.domain_binding_id
        ))
        .with_detail("field", "certificateId"));
    }
    // A repeat of the latest request: the attempt it started.
    if let Some(key) = &body.idempotency_key
        && existing.annotations().get(IDEMPOTENCY_KEY_ANNOTATION) == Some(key)
        && let Some(attempt) = existing.annotations().get(REQUESTED_ATTEMPT_ANNOTATION)
    {
        return Ok(Some(attempt.clone()));
    }
    Ok(None)
}

/// The id of the attempt this request starts: from its idempotency key, else random.
fn new_attempt_id(namespace: &str, certificate_id: &str, body: &IssueOrRenew) -> String {
    match &body.idempotency_key {
        Some(key) => attempt_for_key(namespace, certificate_id, key),
        None => {
            let bytes: [u8; 6] = rand::random();
            format!("att-{}", hex::encode(bytes))
        }
    }
}

/// The Certificate as this request wants it: the attempt it asks for in its annotations,
/// owned by its binding, keeping the Secret an `existing` one names.
fn requested_certificate(
    binding: &DomainBinding,
    certificate_id: &str,
    attempt_id: &str,
    body: &IssueOrRenew,
    existing: Option<&Certificate>,
) -> Certificate {
    let mut annotations = std::collections::BTreeMap::from([(
        REQUESTED_ATTEMPT_ANNOTATION.to_string(),
        attempt_id.to_string(),
    )]);
    if let Some(key) = &body.idempotency_key {
        annotations.insert(IDEMPOTENCY_KEY_ANNOTATION.into(), key.clone());
    }
    if let Some(causation) = &body.causation_id {
        annotations.insert(CAUSATION_ANNOTATION.into(), causation.clone());
    }
    Certificate {
        metadata: ObjectMeta {
            name: Some(certificate_id.to_string()),
            annotations: Some(annotations),
            owner_references: binding.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        spec: CertificateSpec {
            domain_binding_id: binding.name_any(),
            reason: body.reason.unwrap_or_default(),
            provider_key: Some(ACME_PROVIDER.into()),
            challenge_type: Some(HTTP_01.into()),
            secret_name: existing.and_then(|c| c.spec.secret_name.clone()),
        },
        status: None,
    }
}

/// Server-side applies `certificate` (without a status) as the shim's field manager.
async fn apply_certificate(
    certificates: &Api<Certificate>,
    certificate_id: &str,
    certificate: &Certificate,
) -> ApiResult<()> {
    let mut value = serde_json::to_value(certificate).map_err(ApiError::internal)?;
    if let Some(map) = value.as_object_mut() {
        map.remove("status");
    }
    certificates
        .patch(
            certificate_id,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&value),
        )
        .await?;
    Ok(())
}

fn certificate_view(certificate: &Certificate) -> CertificateView {
    let status = certificate.status.clone().unwrap_or_default();
    CertificateView {
        id: certificate.name_any(),
        domain_binding_id: certificate.spec.domain_binding_id.clone(),
        provider_key: certificate
            .spec
            .provider_key
            .clone()
            .unwrap_or_else(|| ACME_PROVIDER.into()),
        secret_name: status.secret_name.clone().unwrap_or_else(|| {
            certificate
                .spec
                .secret_name
                .clone()
                .unwrap_or_else(|| format!("{}-tls", certificate.name_any()))
        }),
        hostname: status.hostname.clone(),
        attempt_id: status.attempt_id.clone(),
        issued_at: status.issued_at.as_ref().map(timestamp),
        not_after: status.not_after.as_ref().map(timestamp),
        renew_at: status.renew_at.as_ref().map(timestamp),
        days_until_expiry: status.days_until_expiry,
        sha256_fingerprint: status.sha256_fingerprint.clone(),
        failed_attempts: status.failed_attempts,
        next_retry_at: status.next_retry_at.as_ref().map(timestamp),
        ready: is_true(&status.conditions, READY),
        conditions: conditions(&status.conditions),
    }
}

fn binding_view(binding: &DomainBinding) -> DomainBindingView {
    let status = binding.status.clone().unwrap_or_default();
    DomainBindingView {
        id: binding.name_any(),
        hostname: binding.spec.hostname.clone(),
        path_prefix: binding.spec.path_prefix.clone(),
        resource_id: binding.spec.resource_id.clone(),
        tls_mode: binding.spec.tls_mode.clone(),
        http_policy: serde_json::to_value(binding.spec.http_policy)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        server_id: status
            .server_id
            .clone()
            .or_else(|| binding.spec.server_id.clone()),
        certificate_id: status.certificate_id.clone(),
        url: status.url.clone(),
        route_status: status.route_status.clone(),
        resolved_addresses: status.resolved_addresses.clone(),
        ready: is_true(&status.conditions, READY),
        conditions: conditions(&status.conditions),
    }
}

async fn list_certificates(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<CertificateList>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let api = Api::<Certificate>::namespaced(state.client.clone(), &organization.namespace);
    let mut items: Vec<CertificateView> = api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(certificate_view)
        .collect();
    items.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Json(CertificateList { items }))
}

async fn show_certificate(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<CertificateView>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    object_name("certificateId", &id).map_err(|_| ApiError::not_found("certificate", &id))?;
    let api = Api::<Certificate>::namespaced(state.client.clone(), &organization.namespace);
    let certificate = api
        .get_opt(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("certificate", &id))?;
    Ok(Json(certificate_view(&certificate)))
}

async fn list_bindings(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<DomainBindingList>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    // From the watch cache: a list costs the API server nothing.
    let mut items: Vec<DomainBindingView> =
        all_in(&state.caches.domain_bindings, &organization.namespace)
            .iter()
            .filter(|binding| binding.metadata.deletion_timestamp.is_none())
            .map(|binding| binding_view(binding))
            .collect();
    items.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Json(DomainBindingList { items }))
}

async fn show_binding(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<DomainBindingView>> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    object_name("domainBindingId", &id).map_err(|_| ApiError::not_found("domain binding", &id))?;
    let binding = find_in(
        &state.caches.domain_bindings,
        &organization.namespace,
        &id,
        "domain binding",
    )?;
    // An unbinding binding no longer serves: it is gone for its callers.
    if binding.metadata.deletion_timestamp.is_some() {
        return Err(ApiError::not_found("domain binding", &id));
    }
    Ok(Json(binding_view(&binding)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_names_one_attempt_per_certificate() {
        let first = attempt_for_key("org-a", "shop", "k1");
        assert_eq!(first, attempt_for_key("org-a", "shop", "k1"));
        assert_ne!(first, attempt_for_key("org-a", "shop", "k2"));
        assert_ne!(first, attempt_for_key("org-b", "shop", "k1"));
        assert!(object_name("x", "shop.example").is_ok());
        assert!(object_name("x", "Shop").is_err());
        assert!(object_name("x", "-a").is_err());
    }
}
