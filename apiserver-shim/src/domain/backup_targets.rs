//! Backup targets over REST: a new target made from `POST /backup-targets` (a bucket's keys
//! kept in a Secret the target owns) and the record a target is listed as (keys never shown).

use berth_api::backups::{BackupTargetSummary, CreateBackupTarget};
use berth_crds::backup::{
    ACCESS_KEY_ID_FIELD, BackupTarget, BackupTargetKind, BackupTargetSpec, CredentialsSecretRef,
    S3Target, SECRET_ACCESS_KEY_FIELD, ServerDirectory,
};
use berth_crds::condition::{self, READY};
use kube::{Api, Resource as _, ResourceExt};

use super::kept_secrets;
use crate::auth::Caller;
use crate::domain::servers;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::write::apply;

/// Name of the Secret holding the keys of bucket target `id`.
fn keys_secret_name(id: &str) -> String {
    format!("{id}-s3-keys")
}

/// Makes target `id` in `namespace` from a checked request.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    namespace: &str,
    id: &str,
    body: CreateBackupTarget,
) -> ApiResult<()> {
    let name = body.name.trim().to_string();
    let spec = match (body.kind, body.s3) {
        (BackupTargetKind::S3, Some(s3)) => {
            let secret = keys_secret_name(id);
            let keys = [
                (ACCESS_KEY_ID_FIELD, s3.access_key_id.as_str()),
                (SECRET_ACCESS_KEY_FIELD, s3.secret_access_key.as_str()),
            ];
            kept_secrets::keep(state, namespace, &secret, &keys).await?;
            let s3 = S3Target {
                bucket: s3.bucket,
                credentials_secret_ref: CredentialsSecretRef { name: secret },
            };
            BackupTargetSpec {
                name,
                kind: BackupTargetKind::S3,
                server_directory: None,
                s3: Some(s3),
            }
        }
        (kind, _) => {
            let server_id = body.server_id.unwrap_or_default();
            servers::lookup(state, caller, &server_id)
                .map_err(|error| error.with_detail("field", "serverId"))?;
            let path = body.path.unwrap_or_default();
            BackupTargetSpec {
                name,
                kind,
                server_directory: Some(ServerDirectory { server_id, path }),
                s3: None,
            }
        }
    };
    let keys = spec
        .s3
        .as_ref()
        .map(|s3| s3.credentials_secret_ref.name.clone());
    let api = Api::<BackupTarget>::namespaced(state.client.clone(), namespace);
    let stored = apply(
        &api,
        &state.caches.backup_targets,
        Some(caller),
        BackupTarget::new(id, spec),
    )
    .await;
    match (stored, keys) {
        (Ok(target), Some(keys)) => {
            let owner = target.controller_owner_ref(&());
            kept_secrets::hand_over(state, namespace, &keys, owner).await
        }
        (Ok(_), None) => Ok(()),
        (Err(error), keys) => {
            if let Some(keys) = keys {
                kept_secrets::forget(state, namespace, &keys).await;
            }
            Err(error)
        }
    }
}

/// How a target is listed.
pub fn summary(target: &BackupTarget) -> BackupTargetSummary {
    let ready = target
        .status
        .as_ref()
        .and_then(|s| condition::find(&s.conditions, READY));
    let directory = target.spec.server_directory.as_ref();
    BackupTargetSummary {
        id: target.name_any(),
        name: target.spec.name.clone(),
        kind: target.spec.kind,
        server_id: directory.map(|d| d.server_id.clone()),
        path: directory.map(|d| d.path.clone()),
        s3: target.spec.s3.as_ref().map(|s3| s3.bucket.clone()),
        ready: ready.is_some_and(|c| c.status == condition::ConditionStatus::True),
        ready_message: ready.map(|c| c.message.clone()),
        created_at: target
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
    }
}
