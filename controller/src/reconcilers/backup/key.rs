//! The organization's backup key: 32 random bytes in the Secret `berth-backup-key` of its
//! namespace, made on the first backup. Never logged, never in a status or an event.

use std::collections::BTreeMap;

use berth_crds::MANAGED_LABEL;
use berth_crds::backup::{BACKUP_KEY_FIELD, BACKUP_KEY_SECRET};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

use super::seal::{KEY_LEN, new_key};
use crate::error::{Error, Result};

/// The namespace's backup key, made when there is none.
pub async fn backup_key(client: &Client, namespace: &str) -> Result<Vec<u8>> {
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    if let Some(secret) = secrets.get_opt(BACKUP_KEY_SECRET).await? {
        return key_of(&secret);
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(BACKUP_KEY_SECRET.to_string()),
            labels: Some(BTreeMap::from([(
                MANAGED_LABEL.to_string(),
                "true".to_string(),
            )])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            BACKUP_KEY_FIELD.to_string(),
            ByteString(new_key().to_vec()),
        )])),
        ..Default::default()
    };
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(created) => key_of(&created),
        // Another backup made it meanwhile: use that one.
        Err(kube::Error::Api(status)) if status.code == 409 => {
            key_of(&secrets.get(BACKUP_KEY_SECRET).await?)
        }
        Err(error) => Err(error.into()),
    }
}

fn key_of(secret: &Secret) -> Result<Vec<u8>> {
    let key = secret
        .data
        .as_ref()
        .and_then(|data| data.get(BACKUP_KEY_FIELD))
        .map(|bytes| bytes.0.clone())
        .filter(|bytes| bytes.len() == KEY_LEN);
    key.ok_or_else(|| {
        Error::InvalidSpec(format!(
            "Secret {BACKUP_KEY_SECRET} has no {KEY_LEN}-byte `{BACKUP_KEY_FIELD}`; restore it \
             from where it was kept (backups sealed with it open with nothing else)"
        ))
    })
}
