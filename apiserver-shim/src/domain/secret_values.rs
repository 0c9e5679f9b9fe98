//! Secret variable values kept in a Secret their owner (a Resource, an Environment) owns: one
//! data key per entry named `<exposure>.<KEY>`, with when the shim last wrote each in an
//! annotation. Written here, read back only masked; deleted with the owner.

use std::collections::BTreeMap;

use berth_crds::variable::{VariableExposure, secret_data_key};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Resource, ResourceExt};

use crate::domain::objects::owned_secret;
use crate::domain::time::timestamp;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Annotation on the Secret: JSON map of data key to when the shim last wrote it.
pub const UPDATED_AT_ANNOTATION: &str = "berth.dev/updated-at";

/// One change: the value to store, or `None` to delete the entry.
pub type Change = (VariableExposure, String, Option<String>);

/// The Secret `name` holding `owner`'s secret values; `label` names the owner on it.
pub struct SecretValues<'a, K> {
    pub owner: &'a K,
    pub name: String,
    pub label: &'static str,
}

impl<K> SecretValues<'_, K>
where
    K: Resource<DynamicType = ()>,
{
    fn api(&self, state: &AppState) -> Api<Secret> {
        let namespace = self.owner.namespace().unwrap_or_default();
        Api::namespaced(state.client.clone(), &namespace)
    }

    /// The Secret, if it exists.
    pub async fn fetch(&self, state: &AppState) -> ApiResult<Option<Secret>> {
        Ok(self.api(state).get_opt(&self.name).await?)
    }

    /// Applies `changes`, creating the Secret owned by the owner when missing. Returns the
    /// Secret as it was, for a rollback.
    pub async fn write(&self, state: &AppState, changes: &[Change]) -> ApiResult<Option<Secret>> {
        let api = self.api(state);
        let now = now();
        // A concurrent writer makes the replace fail with 409; read again and retry.
        for _ in 0..3 {
            let before = api.get_opt(&self.name).await?;
            let mut secret = before.clone().unwrap_or_else(|| self.empty());
            apply(&mut secret, changes, &now)?;
            let result = match &before {
                None => api.create(&PostParams::default(), &secret).await,
                Some(_) => {
                    api.replace(&self.name, &PostParams::default(), &secret)
                        .await
                }
            };
            match result {
                Ok(_) => return Ok(before),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                // Never pass the API server's message on: it could quote the data.
                Err(error) => {
                    tracing::warn!(secret = %self.name, code = ?api_code(&error), "writing a secret values Secret failed");
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

    /// Puts the Secret back as it was before a failed multi-object write.
    pub async fn restore(&self, state: &AppState, before: Option<Secret>) {
        let api = self.api(state);
        let result = match before {
            None => api
                .delete(&self.name, &Default::default())
                .await
                .map(|_| ()),
            Some(mut previous) => match api.get_opt(&self.name).await {
                Ok(current) => {
                    previous.metadata.resource_version =
                        current.and_then(|c| c.metadata.resource_version);
                    api.replace(&self.name, &PostParams::default(), &previous)
                        .await
                        .map(|_| ())
                }
                Err(error) => Err(error),
            },
        };
        if let Err(error) = result {
            tracing::error!(secret = %self.name, code = ?api_code(&error), "could not roll back a secret values Secret");
        }
    }

    /// An empty Secret owned by the owner (deleted with it).
    pub fn empty(&self) -> Secret {
        owned_secret(self.owner, self.label, &self.name, "Opaque")
    }
}

/// `changes` applied to `secret`'s data, each stamped `now` in the annotation.
fn apply(secret: &mut Secret, changes: &[Change], now: &str) -> ApiResult<()> {
    let mut updated = updated_at(secret);
    let data = secret.data.get_or_insert_with(BTreeMap::new);
    for (exposure, key, value) in changes {
        let data_key = secret_data_key(*exposure, key);
        match value {
            Some(value) => {
                data.insert(data_key.clone(), ByteString(value.clone().into_bytes()));
                updated.insert(data_key, now.to_string());
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
    Ok(())
}

/// When the shim last wrote each data key of `secret`.
pub fn updated_at(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .annotations()
        .get(UPDATED_AT_ANNOTATION)
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

fn api_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Now, as the API prints timestamps.
pub fn now() -> String {
    timestamp(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::now(),
    ))
}
