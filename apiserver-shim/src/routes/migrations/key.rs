//! The key plans are attested with: 32 random bytes in a Secret of the system namespace,
//! made by the first shim that needs it and shared by every replica, so a plan made by one
//! shim is accepted by another and a plan edited by a client (even with its digest
//! recomputed) is not.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use rand::RngCore;
use tokio::sync::OnceCell;

use crate::error::{ApiError, ApiResult};
use crate::state::{AppState, FIELD_MANAGER};

const SECRET_NAME: &str = "berth-migration-attestation";
const KEY_FIELD: &str = "key";

static KEY: OnceCell<Vec<u8>> = OnceCell::const_new();

/// The attestation key, read (or made) once per process.
pub async fn attestation_key(state: &AppState) -> ApiResult<&'static [u8]> {
    let key = KEY.get_or_try_init(|| load_or_create(state)).await?;
    Ok(key.as_slice())
}

async fn load_or_create(state: &AppState) -> ApiResult<Vec<u8>> {
    let api = Api::<Secret>::namespaced(state.client.clone(), &state.config.system_namespace);
    if let Some(key) = read(&api).await? {
        return Ok(key);
    }
    let mut key = vec![0u8; 32];
    rand::rng().fill_bytes(&mut key);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(SECRET_NAME.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            KEY_FIELD.into(),
            ByteString(key.clone()),
        )])),
        ..Default::default()
    };
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&params, &secret).await {
        Ok(_) => Ok(key),
        // Another replica made it first: use theirs.
        Err(kube::Error::Api(status)) if status.code == 409 => read(&api)
            .await?
            .ok_or_else(|| ApiError::internal("the migration attestation key vanished")),
        Err(error) => Err(error.into()),
    }
}

async fn read(api: &Api<Secret>) -> ApiResult<Option<Vec<u8>>> {
    let Some(secret) = api.get_opt(SECRET_NAME).await? else {
        return Ok(None);
    };
    let key = secret
        .data
        .and_then(|mut data| data.remove(KEY_FIELD))
        .map(|bytes| bytes.0)
        .filter(|key| key.len() >= 32);
    match key {
        Some(key) => Ok(Some(key)),
        None => Err(ApiError::internal(format!(
            "Secret {SECRET_NAME} holds no {KEY_FIELD} of 32 bytes or more"
        ))),
    }
}
