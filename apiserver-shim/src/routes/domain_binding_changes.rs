//! Binding and unbinding host names over REST (Appaloft's routes and shapes):
//! `POST /domain-bindings`, `GET /domain-bindings/{id}/delete-check` and
//! `DELETE /domain-bindings/{id}` (confirmed). The controller routes, verifies and certifies a
//! binding as it does one applied with kubectl; the shim only writes the object.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_api::common::IdResponse;
use berth_api::domain_binding_changes::{CreateDomainBinding, DeleteDomainBinding};
use berth_crds::certificate::Certificate;
use berth_crds::domain_binding::{
    DomainBinding, DomainBindingSpec, TLS_MODE_AUTO, TLS_MODE_DISABLED,
};
use berth_crds::limits::OBJECT_NAME_MAX;
use berth_crds::member::OrganizationRole;
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use sha2::{Digest, Sha256};

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::fields::{bounded, confirm, normalized_host_name};
use crate::domain::resource_access::lookup_writable;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::domain_binding_changes::{DeleteBlocker, DeleteSafety};

/// Longest idempotency key.
const KEY_MAX: usize = 255;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateDomainBinding, IdResponse, _, _>(
            "/domain-bindings",
            "Bind a host name (and path prefix) to a resource (201; idempotent by idempotencyKey)",
            create,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::get::<DeleteSafety, _, _>(
            "/domain-bindings/{domainBindingId}/delete-check",
            "What deleting a domain binding would leave behind",
            delete_check,
        ),
        Endpoint::delete::<DeleteDomainBinding, IdResponse, _, _>(
            "/domain-bindings/{domainBindingId}",
            "Unbind a host name (confirmed by repeating its id)",
            delete,
        ),
    ]
}

/// What a create request asks for, checked: the spec to write.
fn binding_spec(body: &CreateDomainBinding) -> ApiResult<DomainBindingSpec> {
    let hostname = normalized_host_name(&body.domain_name)?;
    let path_prefix = body.path_prefix.clone().unwrap_or_else(|| "/".into());
    if !path_prefix.starts_with('/') || path_prefix.chars().any(|c| c.is_whitespace()) {
        return Err(ApiError::validation(
            "pathPrefix",
            "pathPrefix must start with / and contain no spaces",
        ));
    }
    refuse_unsupported(body)?;
    Ok(DomainBindingSpec {
        resource_id: body.resource_id.clone(),
        hostname,
        path_prefix,
        tls_mode: tls_mode(body)?,
        server_id: body.server_id.clone(),
        http_policy: body.http_policy.unwrap_or_default(),
    })
}

/// `tlsMode` and `certificatePolicy` say the same thing; they must agree.
fn tls_mode(body: &CreateDomainBinding) -> ApiResult<String> {
    let allowed = [TLS_MODE_AUTO, TLS_MODE_DISABLED];
    for (field, value) in [
        ("tlsMode", &body.tls_mode),
        ("certificatePolicy", &body.certificate_policy),
    ] {
        if let Some(value) = value
            && !allowed.contains(&value.as_str())
        {
            return Err(ApiError::validation(
                field,
                format!("{field} must be auto or disabled"),
            ));
        }
    }
    match (&body.tls_mode, &body.certificate_policy) {
        (Some(mode), Some(policy)) if mode != policy => Err(ApiError::validation(
            "certificatePolicy",
            "certificatePolicy must match tlsMode",
        )),
        (Some(mode), _) | (None, Some(mode)) => Ok(mode.clone()),
        (None, None) => Ok(TLS_MODE_AUTO.into()),
    }
}

/// Appaloft fields Berth's edge proxy does not do: refused, naming the field.
fn refuse_unsupported(body: &CreateDomainBinding) -> ApiResult<()> {
    let unsupported = |field: &str, why: &str| {
        Err(ApiError::validation(field, format!("{field}: {why}"))
            .with_detail("code", "field_not_supported"))
    };
    if body
        .path_handling
        .as_deref()
        .is_some_and(|h| h != "preserve")
    {
        return unsupported("pathHandling", "only preserve is supported");
    }
    if body.proxy_kind.as_deref().is_some_and(|k| k != "caddy") {
        return unsupported("proxyKind", "Berth's edge proxy is caddy");
    }
    if body.redirect_to.is_some() || body.redirect_status.is_some() {
        return unsupported("redirectTo", "redirect bindings are not supported");
    }
    if body.target_service_name.is_some() {
        return unsupported(
            "targetServiceName",
            "set networkProfile.targetServiceName on the resource",
        );
    }
    if body.destination_id.is_some() {
        return unsupported("destinationId", "bindings route to the resource's server");
    }
    Ok(())
}

/// The binding's object name: derived from the idempotency key when there is one, so a
/// repeated request names the same binding.
fn binding_name(namespace: &str, key: Option<&str>) -> String {
    match key {
        Some(key) => {
            let digest = Sha256::digest(format!("{namespace}/{key}").as_bytes());
            format!("dom-{}", &hex::encode(digest)[..12])
        }
        None => crate::token::new_id("dom"),
    }
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateDomainBinding>,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    if let Some(key) = &body.idempotency_key {
        bounded("idempotencyKey", key, KEY_MAX)?;
    }
    let spec = binding_spec(&body)?;
    let resource = lookup_writable(&state, &caller, &body.resource_id)?;
    caller.require_role(OrganizationRole::Member)?;
    for (field, given, actual) in [
        ("projectId", &body.project_id, &resource.spec.project_id),
        (
            "environmentId",
            &body.environment_id,
            &resource.spec.environment_id,
        ),
    ] {
        if given != actual {
            return Err(ApiError::validation(
                field,
                format!("{field} must be the resource's ({actual})"),
            ));
        }
    }
    if let Some(server) = &spec.server_id {
        crate::domain::objects::find_in(
            &state.caches.servers,
            &resource.namespace().unwrap_or_default(),
            server,
            "server",
        )?;
    }
    let namespace = resource.namespace().unwrap_or_default();
    let api = Api::<DomainBinding>::namespaced(state.client.clone(), &namespace);
    let name = binding_name(&namespace, body.idempotency_key.as_deref());
    if let Some(existing) = api.get_opt(&name).await? {
        return repeated(existing, &spec, name);
    }
    let bindings = api.list(&ListParams::default()).await?.items;
    if let Some(taken) = bindings
        .iter()
        .find(|b| b.spec.hostname == spec.hostname && b.spec.path_prefix == spec.path_prefix)
    {
        return Err(ApiError::conflict(format!(
            "{}{} is already bound (domain binding {}, resource {})",
            spec.hostname,
            spec.path_prefix,
            taken.name_any(),
            taken.spec.resource_id
        ))
        .with_detail("field", "domainName")
        .with_detail("conflictingDomainBindingId", taken.name_any()));
    }
    let mut binding = DomainBinding::new(&name, spec);
    // A binding made here is the resource's: it goes (and its Certificate with it) when the
    // resource is deleted.
    binding.metadata.owner_references =
        kube::Resource::owner_ref(resource.as_ref(), &()).map(|o| vec![o]);
    let (kind, id) = caller.actor();
    binding.annotations_mut().extend([
        (UPDATED_BY_KIND.to_string(), kind.to_string()),
        (UPDATED_BY_ID.to_string(), id.to_string()),
    ]);
    api.create(&PostParams::default(), &binding).await?;
    tracing::info!(binding = %name, resource = %body.resource_id, "domain binding created");
    Ok((StatusCode::CREATED, Json(IdResponse { id: name })))
}

/// A repeated request with the same idempotency key: the same binding, or a conflict when the
/// key was used for another.
fn repeated(
    existing: DomainBinding,
    spec: &DomainBindingSpec,
    name: String,
) -> ApiResult<(StatusCode, Json<IdResponse>)> {
    if existing.spec == *spec {
        return Ok((StatusCode::CREATED, Json(IdResponse { id: name })));
    }
    Err(ApiError::conflict(format!(
        "idempotencyKey was already used to bind {}{}",
        existing.spec.hostname, existing.spec.path_prefix
    ))
    .with_detail("field", "idempotencyKey"))
}

/// The binding `id` of the caller's organization, through a resource the caller may see.
async fn visible_binding(state: &AppState, caller: &Caller, id: &str) -> ApiResult<DomainBinding> {
    let organization = caller.require_role(OrganizationRole::Member)?;
    let api = Api::<DomainBinding>::namespaced(state.client.clone(), &organization.namespace);
    let valid = id.len() <= OBJECT_NAME_MAX
        && !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    let binding = match valid {
        true => api.get_opt(id).await?,
        false => None,
    }
    .ok_or_else(|| ApiError::not_found("domain binding", id))?;
    crate::domain::resource_access::lookup(state, caller, &binding.spec.resource_id)
        .map_err(|_| ApiError::not_found("domain binding", id))?;
    Ok(binding)
}

/// Certificates naming the binding: deleting it leaves them unused.
async fn safety(state: &AppState, binding: &DomainBinding) -> ApiResult<DeleteSafety> {
    let id = binding.name_any();
    let namespace = binding.namespace().unwrap_or_default();
    let certificates = Api::<Certificate>::namespaced(state.client.clone(), &namespace)
        .list(&ListParams::default())
        .await?;
    let warnings = certificates
        .items
        .iter()
        .filter(|c| c.spec.domain_binding_id == id)
        .map(|c| DeleteBlocker {
            kind: "certificate-history".into(),
            severity: "warning".into(),
            message: format!(
                "certificate {} for {} stops being renewed and is deleted with the binding",
                c.name_any(),
                binding.spec.hostname
            ),
            related_entity_type: "certificate".into(),
            related_entity_id: c.name_any(),
        })
        .collect();
    Ok(DeleteSafety {
        domain_binding_id: id,
        safe_to_delete: true,
        blockers: Vec::new(),
        warnings,
        preserves_generated_access: true,
        preserves_deployment_snapshots: true,
        preserves_server_applied_route_audit: true,
    })
}

async fn delete_check(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<DeleteSafety>> {
    let binding = visible_binding(&state, &caller, &id).await?;
    Ok(Json(safety(&state, &binding).await?))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<DeleteDomainBinding>,
) -> ApiResult<Json<IdResponse>> {
    if let Some(key) = &body.idempotency_key {
        bounded("idempotencyKey", key, KEY_MAX)?;
    }
    let binding = visible_binding(&state, &caller, &id).await?;
    lookup_writable(&state, &caller, &binding.spec.resource_id)?;
    let confirmation = body.confirmation.unwrap_or_default();
    confirm(
        confirmation.domain_binding_id.as_deref(),
        &id,
        "domainBindingId",
        "domain binding",
    )?;
    let namespace = binding.namespace().unwrap_or_default();
    let api = Api::<DomainBinding>::namespaced(state.client.clone(), &namespace);
    crate::write::delete(&api, &binding, &DeleteParams::default(), &caller).await?;
    tracing::info!(binding = %id, "domain binding deleted");
    Ok(Json(IdResponse { id }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fields::is_host_name;

    fn request(extra: serde_json::Value) -> CreateDomainBinding {
        let mut body = serde_json::json!({
            "projectId": "p", "environmentId": "e", "resourceId": "r",
            "domainName": "Shop.Example.com.",
        });
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn a_request_becomes_a_lowercase_binding_with_defaults() {
        let spec = binding_spec(&request(serde_json::json!({}))).unwrap();
        assert_eq!(spec.hostname, "shop.example.com");
        assert_eq!(spec.path_prefix, "/");
        assert_eq!(spec.tls_mode, "auto");
        let plain = request(serde_json::json!({"certificatePolicy": "disabled"}));
        assert_eq!(binding_spec(&plain).unwrap().tls_mode, "disabled");
    }

    #[test]
    fn what_berth_cannot_honour_is_refused_by_its_field() {
        for (extra, field) in [
            (
                serde_json::json!({"domainName": "no spaces.com"}),
                "domainName",
            ),
            (serde_json::json!({"pathPrefix": "api"}), "pathPrefix"),
            (serde_json::json!({"tlsMode": "manual"}), "tlsMode"),
            (
                serde_json::json!({"tlsMode": "auto", "certificatePolicy": "disabled"}),
                "certificatePolicy",
            ),
            (serde_json::json!({"pathHandling": "strip"}), "pathHandling"),
            (serde_json::json!({"proxyKind": "traefik"}), "proxyKind"),
            (
                serde_json::json!({"redirectTo": "https://a.example"}),
                "redirectTo",
            ),
        ] {
            let error = binding_spec(&request(extra.clone())).unwrap_err();
            assert_eq!(error.body.details["field"], field, "{extra}");
        }
    }

    #[test]
    fn one_idempotency_key_names_one_binding_per_organization() {
        let a = binding_name("org-a", Some("k"));
        assert_eq!(a, binding_name("org-a", Some("k")));
        assert_ne!(a, binding_name("org-b", Some("k")));
        assert!(is_host_name("*.example.com"));
        assert!(!is_host_name("-a.example.com"));
    }
}
