//! One ACME issuance (RFC 8555) with `instant-acme`: order, HTTP-01 answers published on the
//! edge proxy, finalize with a fresh key, download the chain. The account's key lives in a
//! Secret of the namespace, so orders keep one account across restarts.

use std::time::Duration;

use berth_remote::EdgeProxy;
use berth_remote::edge_tls::challenge_route;
use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier, NewAccount,
    NewOrder, OrderStatus, RetryPolicy,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::{Api, Client};

use crate::context::{AcmeSettings, FIELD_MANAGER};

/// Secret (per namespace) holding the ACME account's credentials.
pub const ACCOUNT_SECRET: &str = "berth-acme-account";
const CREDENTIALS_KEY: &str = "credentials.json";
const DIRECTORY_KEY: &str = "directory";
/// How long the CA gets to validate and to sign.
const VALIDATION_WAIT: Duration = Duration::from_secs(90);

/// A certificate just issued. No `Debug`: it holds a private key.
pub struct Issued {
    pub chain_pem: String,
    pub key_pem: String,
}

/// Why an issuance failed, in words for the status (the CA's own error where it gave one).
#[derive(Debug)]
pub struct AcmeFailure {
    pub message: String,
    /// The CA no longer knows the account (its database was reset, as a restarted Pebble's).
    pub unknown_account: bool,
}

impl AcmeFailure {
    fn at(step: &str, error: impl std::fmt::Display) -> Self {
        Self {
            message: format!("{step}: {error}"),
            unknown_account: false,
        }
    }

    /// A failure of a request to the CA, sorted by the type of the CA's problem document.
    pub(super) fn from_ca(step: &str, error: instant_acme::Error) -> Self {
        let unknown_account = matches!(
            &error,
            instant_acme::Error::Api(problem)
                if problem.r#type.as_deref().is_some_and(|t| t.ends_with(ACCOUNT_DOES_NOT_EXIST))
        );
        Self {
            unknown_account,
            ..Self::at(step, error)
        }
    }
}

/// RFC 8555 problem type (after `urn:ietf:params:acme:error:`) of a request by an account the
/// CA does not know.
const ACCOUNT_DOES_NOT_EXIST: &str = ":accountDoesNotExist";

/// The namespace's account at `settings.directory_url`, created on first use.
pub async fn account(
    client: &Client,
    namespace: &str,
    settings: &AcmeSettings,
) -> Result<Account, AcmeFailure> {
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let stored = secrets
        .get_opt(ACCOUNT_SECRET)
        .await
        .map_err(|e| AcmeFailure::at("reading the ACME account", e))?;
    let data = stored.and_then(|s| s.data).unwrap_or_default();
    let same_directory = data
        .get(DIRECTORY_KEY)
        .is_some_and(|d| d.0 == settings.directory_url.as_bytes());
    if same_directory
        && let Some(credentials) = data.get(CREDENTIALS_KEY)
        && let Ok(credentials) = serde_json::from_slice::<AccountCredentials>(&credentials.0)
    {
        return builder(settings)?
            .from_credentials(credentials)
            .await
            .map_err(|e| AcmeFailure::at("restoring the ACME account", e));
    }
    create_account(&secrets, settings).await
}

/// Registers a new account and keeps its credentials (the CA forgot the old one, or there
/// was none).
pub async fn create_account(
    secrets: &Api<Secret>,
    settings: &AcmeSettings,
) -> Result<Account, AcmeFailure> {
    let new = NewAccount {
        contact: &[],
        terms_of_service_agreed: true,
        only_return_existing: false,
    };
    let (account, credentials) = builder(settings)?
        .create(&new, settings.directory_url.clone(), None)
        .await
        .map_err(|e| AcmeFailure::at("registering an ACME account", e))?;
    let json = serde_json::to_vec(&credentials)
        .map_err(|e| AcmeFailure::at("keeping the ACME account", e))?;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(ACCOUNT_SECRET.into()),
            labels: Some([(berth_crds::MANAGED_LABEL.to_string(), "true".to_string())].into()),
            ..Default::default()
        },
        data: Some(
            [
                (CREDENTIALS_KEY.to_string(), ByteString(json)),
                (
                    DIRECTORY_KEY.to_string(),
                    ByteString(settings.directory_url.clone().into_bytes()),
                ),
            ]
            .into(),
        ),
        ..Default::default()
    };
    secrets
        .patch(
            ACCOUNT_SECRET,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|e| AcmeFailure::at("keeping the ACME account", e))?;
    Ok(account)
}

fn builder(settings: &AcmeSettings) -> Result<instant_acme::AccountBuilder, AcmeFailure> {
    match &settings.directory_ca {
        Some(root) => Account::builder_with_root(root),
        None => Account::builder(),
    }
    .map_err(|e| AcmeFailure::at("preparing the ACME client", e))
}

/// Orders a certificate for `hostname`, answering HTTP-01 through `proxy` with routes under
/// `route_prefix` (the caller removes them with [`remove_answers`] whatever the outcome).
pub async fn issue(
    account: &Account,
    hostname: &str,
    proxy: &EdgeProxy,
    route_prefix: &str,
) -> Result<Issued, AcmeFailure> {
    order(account, hostname, proxy, route_prefix).await
}

/// Takes every answer (and the pre-flight probe) under `route_prefix` off the proxy.
pub async fn remove_answers(proxy: &EdgeProxy, route_prefix: &str) {
    let removed = proxy
        .update_routes(|routes, _| {
            routes.retain(|r| {
                !r["@id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with(route_prefix))
            })
        })
        .await;
    if let Err(error) = removed {
        tracing::warn!(%error, "could not remove the HTTP-01 answers");
    }
}

async fn order(
    account: &Account,
    hostname: &str,
    proxy: &EdgeProxy,
    route_prefix: &str,
) -> Result<Issued, AcmeFailure> {
    let identifiers = [Identifier::Dns(hostname.to_string())];
    let mut order = account
        .new_order(&NewOrder::new(&identifiers))
        .await
        .map_err(|e| AcmeFailure::from_ca("the CA refused the order", e))?;
    let mut authorizations = order.authorizations();
    while let Some(authorization) = authorizations.next().await {
        let mut authorization =
            authorization.map_err(|e| AcmeFailure::from_ca("reading the authorization", e))?;
        if authorization.status == AuthorizationStatus::Valid {
            continue;
        }
        let mut challenge = authorization
            .challenge(ChallengeType::Http01)
            .ok_or_else(|| AcmeFailure::at("the CA", "offered no http-01 challenge"))?;
        let answer = challenge.key_authorization().as_str().to_string();
        let route = challenge_route(route_prefix, hostname, &challenge.token, &answer);
        proxy
            .update_routes(|routes, _| routes.push(route))
            .await
            .map_err(|e| AcmeFailure::at("publishing the HTTP-01 answer", e))?;
        challenge
            .set_ready()
            .await
            .map_err(|e| AcmeFailure::from_ca("the CA refused the challenge", e))?;
    }
    let retries = RetryPolicy::new()
        // A CA validates within a second or two; Pebble at once.
        .initial_delay(Duration::from_millis(50))
        .backoff(1.6)
        .timeout(VALIDATION_WAIT);
    let status = order
        .poll_ready(&retries)
        .await
        .map_err(|e| AcmeFailure::from_ca("waiting for validation", e))?;
    if status != OrderStatus::Ready {
        return Err(AcmeFailure::at(
            "the CA did not validate the HTTP-01 challenge",
            validation_problem(&mut order).await,
        ));
    }
    let key_pem = order
        .finalize()
        .await
        .map_err(|e| AcmeFailure::from_ca("finalizing the order", e))?;
    let chain_pem = order
        .poll_certificate(&retries)
        .await
        .map_err(|e| AcmeFailure::from_ca("downloading the certificate", e))?;
    Ok(Issued { chain_pem, key_pem })
}

/// The CA's words about a failed validation (the challenge's problem document).
async fn validation_problem(order: &mut instant_acme::Order) -> String {
    let mut problems = Vec::new();
    let mut authorizations = order.authorizations();
    while let Some(Ok(mut authorization)) = authorizations.next().await {
        if let Ok(state) = authorization.refresh().await {
            problems.extend(
                state
                    .challenges
                    .iter()
                    .filter_map(|c| c.error.as_ref().map(ToString::to_string)),
            );
        }
    }
    if problems.is_empty() {
        "order is invalid".to_string()
    } else {
        problems.join("; ")
    }
}
