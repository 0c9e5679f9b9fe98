//! Where a Resource's secret values are stored: the Secret it owns (`spec.secretsRef`, by
//! default `<resource>-secrets`), one data key per entry named `<exposure>.<KEY>`, with when
//! the shim last wrote each; read back only masked.

use std::collections::BTreeMap;

use berth_api::variables::VariableEntry;
use berth_crds::masking::MASK;
use berth_crds::resource::Resource;
use berth_crds::variable::{VariableExposure, parse_secret_data_key};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, ResourceExt};

use crate::domain::objects::owned_secret;
use crate::domain::time::timestamp;
use crate::domain::variables::exposure_name;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Annotation on the Secret: JSON map of data key to when the shim last wrote it.
const UPDATED_AT_ANNOTATION: &str = "berth.dev/updated-at";
/// Label naming the Resource a secrets Secret belongs to.
const RESOURCE_LABEL: &str = "berth.dev/resource";

/// Name of the Secret holding a resource's secret values.
pub fn secret_name(resource: &Resource) -> String {
    berth_crds::config::secret_name(resource)
}

/// The Secret data key of an entry (shared with the controller through the CRD crate).
pub fn data_key(exposure: VariableExposure, key: &str) -> String {
    berth_crds::variable::secret_data_key(exposure, key)
}

/// The resource's Secret, if it exists.
pub async fn fetch(state: &AppState, resource: &Resource) -> ApiResult<Option<Secret>> {
    let namespace = resource.namespace().unwrap_or_default();
    let api = Api::<Secret>::namespaced(state.client.clone(), &namespace);
    Ok(api.get_opt(&secret_name(resource)).await?)
}

/// The secret entries a Secret holds, masked, sorted by exposure and key.
pub fn entries(resource: &Resource, secret: Option<&Secret>) -> Vec<VariableEntry> {
    let Some(secret) = secret else {
        return Vec::new();
    };
    let updated: BTreeMap<String, String> = secret
        .annotations()
        .get(UPDATED_AT_ANNOTATION)
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    let created = secret.metadata.creation_timestamp.as_ref().map(timestamp);
    let mut items: Vec<VariableEntry> = secret
        .data
        .iter()
        .flatten()
        .map(|(name, _)| {
            let (exposure, key) = parse_secret_data_key(name);
            VariableEntry {
                resource_id: resource.name_any(),
                key: key.to_string(),
                value: MASK.to_string(),
                scope: "resource".into(),
                exposure: exposure_name(exposure).into(),
                is_secret: true,
                kind: "secret".into(),
                updated_at: updated.get(name).cloned().or_else(|| created.clone()),
            }
        })
        .collect();
    items.sort_by(|a, b| (&a.exposure, &a.key).cmp(&(&b.exposure, &b.key)));
    items
}

/// Applies secret value changes (`None` deletes) to the resource's Secret, creating it owned
/// by the Resource when missing. Returns the Secret as it was, for a rollback.
pub async fn write(
    state: &AppState,
    resource: &Resource,
    changes: &[(VariableExposure, String, Option<String>)],
) -> ApiResult<Option<Secret>> {
    let namespace = resource.namespace().unwrap_or_default();
    let api = Api::<Secret>::namespaced(state.client.clone(), &namespace);
    let name = secret_name(resource);
    let now = timestamp(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::now(),
    ));
    // A concurrent writer makes the replace fail with 409; read again and retry.
    for _ in 0..3 {
        let before = api.get_opt(&name).await?;
        let mut secret = before
            .clone()
            .unwrap_or_else(|| new_secret(resource, &name));
        let data = secret.data.get_or_insert_with(BTreeMap::new);
        let mut updated: BTreeMap<String, String> = secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(UPDATED_AT_ANNOTATION))
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        for (exposure, key, value) in changes {
            let data_key = data_key(*exposure, key);
            match value {
                Some(value) => {
                    data.insert(data_key.clone(), ByteString(value.clone().into_bytes()));
                    updated.insert(data_key, now.clone());
                }
                None => {
                    data.remove(&data_key);
                    updated.remove(&data_key);
                }
            }
        }
        secret.annotations_mut().insert(
            UPDATED_AT_ANNOTATION.into(),
            serde_json::to_string(&updated).map_err(ApiError::internal)?,
        );
        let result = match &before {
            None => api.create(&PostParams::default(), &secret).await,
            Some(_) => api.replace(&name, &PostParams::default(), &secret).await,
        };
        match result {
            Ok(_) => return Ok(before),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            // Never pass the API server's message on: it could quote the data.
            Err(error) => {
                tracing::warn!(resource = %resource.name_any(), code = ?api_code(&error), "writing the secrets Secret failed");
                return Err(ApiError::unavailable(
                    "the secrets could not be stored; retry shortly",
                ));
            }
        }
    }
    Err(ApiError::conflict(
        "the secrets changed while being written; retry the request",
    ))
}

/// Puts a Secret back as it was before a failed multi-object write.
pub async fn restore(state: &AppState, resource: &Resource, before: Option<Secret>) {
    let namespace = resource.namespace().unwrap_or_default();
    let api = Api::<Secret>::namespaced(state.client.clone(), &namespace);
    let name = secret_name(resource);
    let result = match before {
        None => api.delete(&name, &Default::default()).await.map(|_| ()),
        Some(mut previous) => match api.get_opt(&name).await {
            Ok(current) => {
                previous.metadata.resource_version =
                    current.and_then(|c| c.metadata.resource_version);
                api.replace(&name, &PostParams::default(), &previous)
                    .await
                    .map(|_| ())
            }
            Err(error) => Err(error),
        },
    };
    if let Err(error) = result {
        tracing::error!(resource = %resource.name_any(), code = ?api_code(&error), "could not roll back the secrets Secret");
    }
}

fn api_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// An empty Secret `name` owned by `resource` (deleted with it).
pub(super) fn new_secret(resource: &Resource, name: &str) -> Secret {
    owned_secret(resource, RESOURCE_LABEL, name, "Opaque")
}

/// Now, as the API prints timestamps.
pub fn now() -> String {
    timestamp(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::now(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_keys_carry_the_exposure() {
        assert_eq!(
            data_key(VariableExposure::BuildTime, "NPM_TOKEN"),
            "build-time.NPM_TOKEN"
        );
        assert_eq!(
            parse_secret_data_key("runtime.API_KEY"),
            (VariableExposure::Runtime, "API_KEY")
        );
        assert_eq!(
            parse_secret_data_key("HAND_MADE"),
            (VariableExposure::Runtime, "HAND_MADE")
        );
    }
}
