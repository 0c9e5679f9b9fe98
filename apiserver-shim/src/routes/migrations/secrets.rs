//! Resolves a plan's `secretRef`s at apply, and only there: `k8s://<secret>#<key>` from a
//! Secret of the organization's namespace, `env://NAME` from the values the client sent with
//! this request (the CLI reads them from its own environment). Never the shim's environment,
//! never stored, never in a message.

use std::collections::{BTreeMap, HashMap};

use berth_migrate::plan::{SecretRef, parse_secret_ref};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::state::AppState;

/// Each reference of the plan → its value, or why it has none (a message without the value).
pub struct ResolvedSecrets(HashMap<String, Result<String, String>>);

impl ResolvedSecrets {
    pub async fn resolve(
        state: &AppState,
        namespace: &str,
        references: impl IntoIterator<Item = String>,
        sent: &BTreeMap<String, String>,
    ) -> Self {
        let mut resolved = HashMap::new();
        for reference in references {
            if resolved.contains_key(&reference) {
                continue;
            }
            let value = resolve_one(state, namespace, &reference, sent).await;
            resolved.insert(reference, value);
        }
        Self(resolved)
    }

    /// The value of `reference` (as the plan spells it).
    pub fn value(&self, reference: &SecretRef) -> Result<String, String> {
        let text = spell(reference);
        self.0
            .get(&text)
            .cloned()
            .unwrap_or_else(|| Err(format!("{text} was not resolved")))
    }
}

fn spell(reference: &SecretRef) -> String {
    match reference {
        SecretRef::Kubernetes { secret, key } => format!("k8s://{secret}#{key}"),
        SecretRef::Environment { name } => format!("env://{name}"),
    }
}

async fn resolve_one(
    state: &AppState,
    namespace: &str,
    reference: &str,
    sent: &BTreeMap<String, String>,
) -> Result<String, String> {
    match parse_secret_ref("secretRef", reference).map_err(|e| e.message)? {
        SecretRef::Environment { name } => sent
            .get(reference)
            .or_else(|| sent.get(&name))
            .filter(|value| !value.is_empty())
            .cloned()
            .ok_or_else(|| {
                format!(
                    "no value was sent for {reference}: set {name} in the environment of \
                     `berth migrate apply`, or send it in secretValues"
                )
            }),
        SecretRef::Kubernetes { secret, key } => read_secret(state, namespace, &secret, &key).await,
    }
}

async fn read_secret(
    state: &AppState,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<String, String> {
    let api = Api::<Secret>::namespaced(state.client.clone(), namespace);
    let secret = api
        .get_opt(name)
        .await
        .map_err(|_| format!("Secret {name} could not be read"))?
        .ok_or_else(|| format!("there is no Secret {name} in the organization's namespace"))?;
    let bytes = secret
        .data
        .and_then(|mut data| data.remove(key))
        .ok_or_else(|| format!("Secret {name} has no key {key}"))?;
    String::from_utf8(bytes.0).map_err(|_| format!("Secret {name}'s {key} is not UTF-8 text"))
}
