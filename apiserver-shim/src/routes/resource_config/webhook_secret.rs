//! The webhook secret of a git source's binding: 32 random bytes, hex, in the Secret
//! `<resource>-webhook` owned by the Resource (so it goes with it). The REST API shows it once,
//! when it is created or rotated; kubectl users may create the Secret themselves.

use std::collections::BTreeMap;

use berth_crds::resource::Resource;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use rand::RngCore;

use super::secret_store::new_secret;
use crate::domain::webhooks::{WEBHOOK_SECRET_KEY, webhook_secret_name};
use crate::error::ApiResult;
use crate::state::{AppState, FIELD_MANAGER};

/// Creates the binding's secret when it has none (or `rotate` asks for a new one) and returns
/// it; `None` when the existing one stays (it is never shown again).
pub async fn ensure(
    state: &AppState,
    resource: &Resource,
    rotate: bool,
) -> ApiResult<Option<String>> {
    let namespace = resource.namespace().unwrap_or_default();
    let api = Api::<Secret>::namespaced(state.client.clone(), &namespace);
    let name = webhook_secret_name(&resource.name_any());
    let present = api
        .get_opt(&name)
        .await?
        .and_then(|s| s.data)
        .is_some_and(|data| data.contains_key(WEBHOOK_SECRET_KEY));
    if present && !rotate {
        return Ok(None);
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let value = hex::encode(bytes);
    let mut secret = new_secret(resource, &name);
    secret.data = Some(BTreeMap::from([(
        WEBHOOK_SECRET_KEY.to_string(),
        ByteString(value.clone().into_bytes()),
    )]));
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(&name, &params, &Patch::Apply(&secret)).await?;
    tracing::info!(resource = %resource.name_any(), rotated = present, "webhook secret written");
    Ok(Some(value))
}
