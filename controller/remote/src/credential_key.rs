//! The private key an SshCredential references, read from its Secret: shared by the controller
//! (which connects with it) and the shim (whose terminal does).

use berth_crds::ssh_credential::{SshCredential, reason};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::client_key::{ClientKey, ClientKeyError};

/// Why a credential's key cannot be used. Messages name the Secret, never its contents.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyProblem {
    SecretNotFound {
        secret: String,
    },
    KeyNotFound {
        secret: String,
        key: String,
    },
    Invalid {
        secret: String,
        error: ClientKeyError,
    },
}

impl KeyProblem {
    /// The credential's condition reason for this problem.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::SecretNotFound { .. } => reason::SECRET_NOT_FOUND,
            Self::KeyNotFound { .. } => reason::KEY_NOT_FOUND,
            Self::Invalid { .. } => reason::INVALID_KEY,
        }
    }

    /// What is wrong, naming the Secret and key, never their contents.
    pub fn message(&self) -> String {
        match self {
            Self::SecretNotFound { secret } => format!("Secret {secret} does not exist"),
            Self::KeyNotFound { secret, key } => format!("Secret {secret} has no key {key}"),
            Self::Invalid { secret, error } => format!("Secret {secret}: {error}"),
        }
    }
}

/// Reads and parses the private key a credential references.
pub async fn load_key(
    client: &kube::Client,
    credential: &SshCredential,
) -> Result<Result<ClientKey, KeyProblem>, kube::Error> {
    // SshCredential is a namespaced kind: an object read from the API server has a namespace.
    let namespace = credential.metadata.namespace.as_deref().unwrap_or_default();
    let reference = &credential.spec.private_key_secret_ref;
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(&reference.name)
        .await?;
    Ok(credential_key(credential, secret.as_ref()))
}

/// The private key `credential` references, read from `secret` (its key Secret, if found).
pub fn credential_key(
    credential: &SshCredential,
    secret: Option<&Secret>,
) -> Result<ClientKey, KeyProblem> {
    let reference = &credential.spec.private_key_secret_ref;
    key_from_secret(secret, &reference.name, &reference.key)
}

/// The key in `secret` under `key`, or what is wrong with it.
pub fn key_from_secret(
    secret: Option<&Secret>,
    secret_name: &str,
    key: &str,
) -> Result<ClientKey, KeyProblem> {
    let secret = secret.ok_or_else(|| KeyProblem::SecretNotFound {
        secret: secret_name.to_string(),
    })?;
    let bytes = secret
        .data
        .as_ref()
        .and_then(|data| data.get(key))
        .map(|value| value.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|data| data.get(key))
                .map(|value| value.clone().into_bytes())
        })
        .ok_or_else(|| KeyProblem::KeyNotFound {
            secret: secret_name.to_string(),
            key: key.to_string(),
        })?;
    ClientKey::parse(&bytes).map_err(|error| KeyProblem::Invalid {
        secret: secret_name.to_string(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::ByteString;

    use super::*;

    const KEY: &str = include_str!("testdata/unit_test_key");

    fn secret(key: &str, value: &str) -> Secret {
        Secret {
            data: Some([(key.to_string(), ByteString(value.as_bytes().to_vec()))].into()),
            ..Default::default()
        }
    }

    #[test]
    fn missing_secret_and_key_are_named_without_contents() {
        let missing = key_from_secret(None, "deploy-key", "privateKey").unwrap_err();
        assert_eq!(missing.reason(), reason::SECRET_NOT_FOUND);
        let no_key =
            key_from_secret(Some(&secret("other", KEY)), "deploy-key", "privateKey").unwrap_err();
        assert_eq!(no_key.reason(), reason::KEY_NOT_FOUND);
        let invalid = key_from_secret(
            Some(&secret("privateKey", "hunter2-secret")),
            "deploy-key",
            "privateKey",
        )
        .unwrap_err();
        assert_eq!(invalid.reason(), reason::INVALID_KEY);
        assert!(!invalid.message().contains("hunter2"));
    }
}
