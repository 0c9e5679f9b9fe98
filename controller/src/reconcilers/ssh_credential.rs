//! SshCredential: derives the public key from the referenced Secret, records which servers use
//! the credential (spec §2.2 "SSH credential usage"), and keeps it while any server does.

use std::sync::Arc;

use berth_crds::condition::{self, Condition, DELETION_BLOCKED};
use berth_crds::server::Server;
use berth_crds::ssh_credential::{SshCredential, SshCredentialStatus, SshCredentialUsage, reason};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};

use super::fresh::with_current_finalizers;
use super::policy::{CONFLICT_RECHECK, RESYNC_AFTER, drain, error_policy};
use crate::cache::Subscription;
use crate::conditions::Stamp;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::reconcilers::event_reason;
use crate::status::StatusWriter;
use berth_remote::{ClientKey, KeyProblem, load_key};

const KIND: &str = "SshCredential";
/// Keeps a credential while servers use it.
pub const FINALIZER: &str = "berth.dev/ssh-credential-in-use";
/// Held on the key's Secret while the credential exists: when a whole namespace is deleted,
/// its servers still log in to remove their edge proxies before the key goes.
pub const KEY_FINALIZER: &str = "berth.dev/ssh-credential-key";
/// How often a blocked deletion is re-checked (server changes also trigger a check).
const BLOCKED_RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// What the SshCredential controller reacts to.
pub struct Inputs {
    pub credentials: Subscription<SshCredential>,
    pub secrets: Subscription<Secret>,
    pub servers: Subscription<Server>,
}

pub async fn run(
    context: Arc<Context>,
    inputs: Inputs,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let credentials = context.caches.credentials.clone();
    let by_secret = credentials.clone();
    let by_server = credentials.clone();
    let client = context.client.clone();
    // Secrets carry no Berth label, so every Secret is mapped to the credentials that
    // reference it; a server change re-counts the usage of its namespace's credentials
    // (all of them, since the server may have just switched away from one).
    let stream = Controller::for_shared_stream(inputs.credentials, credentials)
        .watches_shared_stream(inputs.secrets, move |secret| {
            let namespace = secret.namespace();
            let name = secret.name_any();
            let credentials: Vec<_> = by_secret
                .state()
                .into_iter()
                .filter(|c| {
                    c.namespace() == namespace && c.spec.private_key_secret_ref.name == name
                })
                .map(|c| ObjectRef::from_obj(c.as_ref()))
                .collect();
            if credentials.is_empty() && secret.finalizers().iter().any(|f| f == KEY_FINALIZER) {
                tokio::spawn(release_orphaned_key(client.clone(), Secret::clone(&secret)));
            }
            credentials
        })
        .watches_shared_stream(inputs.servers, move |server| {
            let namespace = server.namespace();
            by_server
                .state()
                .into_iter()
                .filter(|c| c.namespace() == namespace)
                .map(|c| ObjectRef::from_obj(c.as_ref()))
                .collect::<Vec<_>>()
        })
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy(KIND), context);
    drain(KIND, stream).await;
}

/// The status a credential should have. Pure: the key, its usage and the time are inputs.
pub fn desired_status(
    credential: &SshCredential,
    key: &Result<ClientKey, KeyProblem>,
    usage: SshCredentialUsage,
    now: Timestamp,
) -> SshCredentialStatus {
    let current = credential.status.clone().unwrap_or_default();
    let generation = credential.metadata.generation;
    let fingerprint = key.as_ref().ok().map(|k| k.fingerprint().to_string());
    let rotated = matches!(
        (&current.fingerprint, &fingerprint),
        (Some(before), Some(after)) if before != after
    );
    let delete_blockers: Vec<String> = usage
        .servers
        .iter()
        .map(|s| format!("server/{}", s.server_id))
        .collect();
    let mut status = SshCredentialStatus {
        public_key_configured: key.is_ok(),
        private_key_configured: key.is_ok(),
        public_key: key.as_ref().ok().map(|k| k.public_key().to_string()),
        fingerprint,
        rotated_at: if rotated {
            Some(Time(now))
        } else {
            current.rotated_at.clone()
        },
        usage,
        delete_blockers,
        observed_generation: generation,
        conditions: current.conditions,
    };
    let stamp = Stamp { generation, now };
    let ready = match key {
        Ok(key) => stamp.ready(
            reason::KEY_LOADED,
            format!(
                "private key {} loaded; used by {} server(s)",
                key.fingerprint(),
                status.usage.total_servers
            ),
        ),
        Err(problem) => stamp.not_ready(problem.reason(), problem.message()),
    };
    condition::merge(&mut status.conditions, ready);
    if credential.metadata.deletion_timestamp.is_some() {
        let deletion = deletion_condition(&status.delete_blockers, stamp);
        condition::merge(&mut status.conditions, deletion);
    }
    status
}

/// `DeletionBlocked`: `True` naming the servers while any uses the credential.
fn deletion_condition(blockers: &[String], stamp: Stamp) -> Condition {
    if blockers.is_empty() {
        return stamp.deletion_unblocked("no server uses this credential");
    }
    stamp.deletion_blocked(format!(
        "deletion waits until no server uses this credential: {}",
        blockers.join(", ")
    ))
}

async fn reconcile(credential: Arc<SshCredential>, context: Arc<Context>) -> Result<Action> {
    let _timer = context.metrics.reconcile_started(KIND);
    let namespace = credential
        .namespace()
        .ok_or(Error::MissingObjectKey("metadata.namespace"))?;
    let api = Api::<SshCredential>::namespaced(context.client.clone(), &namespace);
    let Some(credential) = with_current_finalizers(&api, credential, FINALIZER).await? else {
        return Ok(Action::await_change());
    };
    let key = load_key(&context.client, &credential).await?;
    let servers = Api::<Server>::namespaced(context.client.clone(), &namespace)
        .list(&ListParams::default())
        .await?;
    let usage = berth_crds::ssh_credential::usage_of(&credential.name_any(), &servers.items);
    let current = credential.status.as_ref();
    let status = desired_status(&credential, &key, usage, Timestamp::now());
    // What we read may be overtaken: the shim writes the key's Secret, then records the key
    // (and a rotation's time) in the status itself. Our conclusion ("no key yet", "rotated
    // just now") must not replace its record, so it is written only over the version read.
    match StatusWriter::new(&api, credential.as_ref())
        .if_unchanged()
        .apply(current, &status)
        .await
    {
        Err(error) if error.is_conflict() => return Ok(Action::requeue(CONFLICT_RECHECK)),
        written => written?,
    };
    publish_changes(&context, &credential, current, &status).await;

    let deleting = credential.metadata.deletion_timestamp.is_some();
    if deleting && !status.delete_blockers.is_empty() {
        return Ok(Action::requeue(BLOCKED_RECHECK));
    }
    let client = context.client.clone();
    finalizer(&api, FINALIZER, credential, |event| async move {
        match event {
            FinalizerEvent::Apply(credential) => {
                hold_key(&client, &credential, true).await?;
                Ok(Action::requeue(RESYNC_AFTER))
            }
            FinalizerEvent::Cleanup(credential) => {
                hold_key(&client, &credential, false).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|error| Error::Finalizer(Box::new(error)))
}

/// Adds (`hold`) or removes [`KEY_FINALIZER`] on the credential's key Secret. The write names
/// the Secret's resourceVersion, so a concurrent change is retried, not overwritten.
async fn hold_key(client: &kube::Client, credential: &SshCredential, hold: bool) -> Result<()> {
    let namespace = credential.namespace().unwrap_or_default();
    let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
    let name = &credential.spec.private_key_secret_ref.name;
    let Some(secret) = secrets.get_opt(name).await? else {
        return Ok(());
    };
    let mut finalizers = secret.finalizers().to_vec();
    let held = finalizers.iter().any(|f| f == KEY_FINALIZER);
    if held == hold {
        return Ok(());
    }
    if hold && !exists_undeleted(client, credential).await? {
        // A reconcile from a cache that has not seen the deletion yet: holding the key now
        // would outlive the credential, whose cleanup already ran.
        return Ok(());
    }
    if hold {
        finalizers.push(KEY_FINALIZER.to_string());
    } else {
        finalizers.retain(|f| f != KEY_FINALIZER);
    }
    let patch = serde_json::json!({ "metadata": {
        "finalizers": finalizers,
        "resourceVersion": secret.resource_version(),
    }});
    secrets
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Releases [`KEY_FINALIZER`] from a Secret no SshCredential references any more. A hold can
/// land after its credential's cleanup (a deletion between the check and the write, or a
/// write a killed controller had sent); the finalizer would then keep the Secret, and its
/// namespace, from ever being deleted. The API server is asked, not the cache, which may not
/// have listed the credentials yet.
async fn release_orphaned_key(client: kube::Client, secret: Secret) {
    let namespace = secret.namespace().unwrap_or_default();
    let name = secret.name_any();
    let credentials = Api::<SshCredential>::namespaced(client.clone(), &namespace);
    let referenced = match credentials.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .any(|c| c.spec.private_key_secret_ref.name == name),
        Err(error) => {
            tracing::warn!(%error, %namespace, secret = %name, "could not check an SSH key's credential");
            return;
        }
    };
    if referenced {
        return;
    }
    let finalizers: Vec<&String> = secret
        .finalizers()
        .iter()
        .filter(|f| *f != KEY_FINALIZER)
        .collect();
    let patch = serde_json::json!({ "metadata": {
        "finalizers": finalizers,
        "resourceVersion": secret.resource_version(),
    }});
    let secrets = Api::<Secret>::namespaced(client, &namespace);
    match secrets
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            tracing::info!(%namespace, secret = %name, "released the key of a credential that is gone")
        }
        // A newer version brings another event, and another look.
        Err(error) => tracing::debug!(%error, %namespace, secret = %name, "key not released"),
    }
}

/// Whether the credential exists, as the API server has it now, and is not being deleted.
async fn exists_undeleted(client: &kube::Client, credential: &SshCredential) -> Result<bool> {
    let namespace = credential.namespace().unwrap_or_default();
    let current = Api::<SshCredential>::namespaced(client.clone(), &namespace)
        .get_opt(&credential.name_any())
        .await?;
    Ok(current.is_some_and(|c| c.metadata.deletion_timestamp.is_none()))
}

/// Events for a rotated key and a blocked deletion, each once per change.
async fn publish_changes(
    context: &Context,
    credential: &SshCredential,
    before: Option<&SshCredentialStatus>,
    after: &SshCredentialStatus,
) {
    let reference = credential.object_ref(&());
    if after.rotated_at.is_some()
        && before.and_then(|b| b.rotated_at.as_ref()) != after.rotated_at.as_ref()
    {
        let note = format!(
            "private key rotated; new key {}",
            after.fingerprint.as_deref().unwrap_or("unknown")
        );
        context
            .publish_event(
                &reference,
                EventType::Normal,
                event_reason::KEY_ROTATED,
                note,
            )
            .await;
    }
    let was_blocked = before.is_some_and(|b| condition::is_true(&b.conditions, DELETION_BLOCKED));
    if !was_blocked && condition::is_true(&after.conditions, DELETION_BLOCKED) {
        let note = format!(
            "deletion blocked while servers use this credential: {}",
            after.delete_blockers.join(", ")
        );
        context
            .publish_event(
                &reference,
                EventType::Warning,
                event_reason::DELETION_BLOCKED,
                note,
            )
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::condition::{ConditionStatus, READY};
    use berth_crds::server::{ServerLifecycle, ServerSpec};
    use berth_crds::ssh_credential::{PrivateKeySecretRef, SshCredentialKind, SshCredentialSpec};
    use berth_remote::key_from_secret;
    use k8s_openapi::ByteString;

    /// A throwaway key made for the unit tests.
    const KEY: &str = include_str!("../../remote/src/testdata/unit_test_key");

    fn credential() -> SshCredential {
        let mut credential = SshCredential::new(
            "deploy-key",
            SshCredentialSpec {
                name: "Deploy key".into(),
                kind: SshCredentialKind::SshPrivateKey,
                username: None,
                private_key_secret_ref: PrivateKeySecretRef {
                    name: "deploy-key".into(),
                    key: "privateKey".into(),
                },
            },
        );
        credential.metadata.generation = Some(1);
        credential
    }

    fn server(name: &str, credential: &str, lifecycle: ServerLifecycle) -> Server {
        let mut spec: ServerSpec = serde_json::from_value(serde_json::json!({
            "host": "203.0.113.9",
            "credentialId": credential,
        }))
        .unwrap();
        spec.lifecycle_status = lifecycle;
        Server::new(name, spec)
    }

    fn secret(key: &str, value: &str) -> Secret {
        Secret {
            data: Some([(key.to_string(), ByteString(value.as_bytes().to_vec()))].into()),
            ..Default::default()
        }
    }

    #[test]
    fn loaded_key_makes_it_ready_with_public_key_and_no_private_key() {
        let key = key_from_secret(Some(&secret("privateKey", KEY)), "deploy-key", "privateKey");
        let status = desired_status(
            &credential(),
            &key,
            SshCredentialUsage::default(),
            Timestamp::now(),
        );
        assert!(status.private_key_configured && status.public_key_configured);
        assert!(
            status
                .public_key
                .as_deref()
                .unwrap()
                .starts_with("ssh-ed25519 ")
        );
        assert!(condition::is_true(&status.conditions, READY));
        assert!(status.rotated_at.is_none());
        let yaml = serde_json::to_string(&status).unwrap();
        assert!(!yaml.contains("PRIVATE KEY"));
    }

    #[test]
    fn a_new_fingerprint_stamps_rotated_at() {
        let key = key_from_secret(Some(&secret("privateKey", KEY)), "deploy-key", "privateKey");
        let mut credential = credential();
        credential.status = Some(SshCredentialStatus {
            fingerprint: Some("SHA256:previous".into()),
            ..Default::default()
        });
        let status = desired_status(
            &credential,
            &key,
            SshCredentialUsage::default(),
            Timestamp::now(),
        );
        assert!(status.rotated_at.is_some());
        credential.status = Some(status.clone());
        let again = desired_status(
            &credential,
            &key,
            SshCredentialUsage::default(),
            Timestamp::now(),
        );
        assert_eq!(again.rotated_at, status.rotated_at);
    }

    #[test]
    fn deleting_a_used_credential_lists_its_servers_as_blockers() {
        let mut credential = credential();
        credential.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        let servers = vec![server("web-1", "deploy-key", ServerLifecycle::Active)];
        let key = Err(KeyProblem::SecretNotFound {
            secret: "deploy-key".into(),
        });
        let status = desired_status(
            &credential,
            &key,
            berth_crds::ssh_credential::usage_of("deploy-key", &servers),
            Timestamp::now(),
        );
        assert_eq!(status.delete_blockers, vec!["server/web-1"]);
        let blocked = condition::find(&status.conditions, DELETION_BLOCKED).unwrap();
        assert_eq!(blocked.status, ConditionStatus::True);
        assert!(blocked.message.contains("server/web-1"));
    }

    /// Reads its key (twice: to describe it, then to see it held) and its servers; writes
    /// nothing when the status and the key's finalizer are already in place.
    #[tokio::test]
    async fn a_credential_in_use_and_up_to_date_only_reads() {
        use crate::context::fixtures::Exchange;
        let (context, api, _feeds) = Context::test();
        let mut secret = secret("privateKey", KEY);
        secret.metadata.name = Some("deploy-key".into());
        secret.metadata.finalizers = Some(vec![KEY_FINALIZER.into()]);
        let servers = vec![server("web-1", "deploy-key", ServerLifecycle::Active)];
        let mut credential = credential();
        credential.metadata.namespace = Some("org-acme".into());
        credential.metadata.finalizers = Some(vec![FINALIZER.into()]);
        let key = key_from_secret(Some(&secret), "deploy-key", "privateKey");
        let usage = berth_crds::ssh_credential::usage_of("deploy-key", &servers);
        let earlier = "2026-01-01T08:00:00Z".parse().unwrap();
        credential.status = Some(desired_status(&credential, &key, usage, earlier));
        let list = serde_json::json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "ServerList", "metadata": {},
            "items": servers,
        });
        let key_path = "/api/v1/namespaces/org-acme/secrets/deploy-key";
        let script = api.serve([
            Exchange::get(key_path).returns(&secret),
            Exchange::get("/apis/berth.dev/v1alpha1/namespaces/org-acme/servers").returns(&list),
            Exchange::get(key_path).returns(&secret),
        ]);
        let action = reconcile(Arc::new(credential), context).await.unwrap();
        assert_eq!(action, Action::requeue(RESYNC_AFTER));
        script.finish().await;
    }
}
