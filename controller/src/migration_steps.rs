//! Where the steps of Migrations written with kubectl run: the controller's side of the
//! internal call to berth-shim (`migration_runner` in berth-vocabulary) — the shim's address, the bearer token the controller keeps in a Secret
//! of the system namespace (made on first use), and when a failed step may be retried.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use berth_crds::migration::Migration;
use berth_vocabulary::migration_runner::{
    NextStep, NextStepRequest, TOKEN_KEY, TOKEN_SECRET, Work, next_step_path,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;
use kube::{Api, Client, ResourceExt};
use rand::RngCore;
use tokio::sync::OnceCell;

use crate::error::{Error, Result};

/// How long a failure a retry can fix waits before its step runs again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// A step may wait for a database to be ready before it deploys: minutes, not hours.
const STEP_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Where the steps of Migrations written with kubectl run.
pub struct Shim {
    /// berth-shim's origin (`http://berth-shim` in the cluster); `None` when not configured.
    url: Option<String>,
    http: reqwest::Client,
    system_namespace: String,
    token: OnceCell<String>,
    /// When each task that stopped on a failure a retry can fix may run again.
    retries: Mutex<HashMap<String, Instant>>,
}

impl Shim {
    pub fn new(url: Option<String>, system_namespace: String) -> Self {
        let http = reqwest::Client::builder()
            .timeout(STEP_TIMEOUT)
            .build()
            .unwrap_or_default();
        Self {
            url: url.map(|u| u.trim_end_matches('/').to_string()),
            http,
            system_namespace,
            token: OnceCell::new(),
            retries: Mutex::default(),
        }
    }

    /// Asks berth-shim to run the next step of `work` of `migration`, as read now; `None` when
    /// the task changed since (its watch event brings the new version).
    pub async fn next_step(
        &self,
        client: &Client,
        migration: &Migration,
        work: Work,
    ) -> Result<Option<NextStep>> {
        let url = self.url.as_deref().ok_or_else(|| {
            Error::Shim(
                "berth-controller was not told berth-shim's address (--shim-url, \
                 BERTH_SHIM_URL), so Migrations written with kubectl wait"
                    .into(),
            )
        })?;
        let namespace = migration.namespace().unwrap_or_default();
        let request = NextStepRequest {
            work,
            resource_version: migration.resource_version().unwrap_or_default(),
        };
        let path = next_step_path(&namespace, &migration.name_any());
        let response = self
            .http
            .post(format!("{url}{path}"))
            .bearer_auth(self.token(client).await?)
            .json(&request)
            .send()
            .await
            .map_err(|e| Error::Shim(format!("berth-shim at {url} did not answer: {e}")))?;
        let status = response.status();
        if status == reqwest::StatusCode::CONFLICT {
            return Ok(None);
        }
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(Error::Shim(format!("berth-shim answered {status}: {body}")));
        }
        let next = response
            .json()
            .await
            .map_err(|e| Error::Shim(format!("berth-shim's answer was not a step: {e}")))?;
        Ok(Some(next))
    }

    /// The token of these calls, read from its Secret or made on first use.
    async fn token(&self, client: &Client) -> Result<&str> {
        let token = self
            .token
            .get_or_try_init(|| load_or_create(client, &self.system_namespace))
            .await?;
        Ok(token)
    }

    /// How long `migration`'s retry must still wait, if it must.
    pub fn retry_wait(&self, migration: &Migration, now: Instant) -> Option<Duration> {
        let retries = self.retries.lock().unwrap_or_else(|e| e.into_inner());
        let due = retries.get(&key(migration))?;
        due.checked_duration_since(now)
    }

    /// Spaces the next run of `migration` after a failure a retry can fix, or forgets it.
    pub fn note_outcome(&self, migration: &Migration, retry_later: bool, now: Instant) {
        let mut retries = self.retries.lock().unwrap_or_else(|e| e.into_inner());
        if retry_later {
            retries.insert(key(migration), now + RETRY_AFTER);
        } else {
            retries.remove(&key(migration));
        }
    }
}

fn key(migration: &Migration) -> String {
    format!(
        "{}/{}",
        migration.namespace().unwrap_or_default(),
        migration.name_any()
    )
}

async fn load_or_create(client: &Client, namespace: &str) -> Result<String> {
    let api = Api::<Secret>::namespaced(client.clone(), namespace);
    if let Some(token) = read(&api).await? {
        return Ok(token);
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = hex::encode(bytes);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(TOKEN_SECRET.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            TOKEN_KEY.into(),
            ByteString(token.clone().into_bytes()),
        )])),
        ..Default::default()
    };
    match api.create(&Default::default(), &secret).await {
        Ok(_) => Ok(token),
        // Another replica made it first: use theirs.
        Err(kube::Error::Api(status)) if status.code == 409 => read(&api)
            .await?
            .ok_or_else(|| Error::Shim("the migration runner's token vanished".into())),
        Err(error) => Err(error.into()),
    }
}

async fn read(api: &Api<Secret>) -> Result<Option<String>> {
    let secret = api.get_opt(TOKEN_SECRET).await?;
    let token = secret
        .and_then(|s| s.data)
        .and_then(|mut data| data.remove(TOKEN_KEY))
        .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned());
    Ok(token.filter(|t| !t.is_empty()))
}
