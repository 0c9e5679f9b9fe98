//! Spec §4.9, SSH credentials.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;
use crate::limits::NAME_MAX;
use crate::validate::{Checked, FieldError, bounded};

/// Longest login name (what `useradd` accepts).
pub const USERNAME_MAX: usize = 32;

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::credentials::{
    SshCredentialKind, SshCredentialServerUsage, SshCredentialUsage,
};

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteCredential {
    /// Must carry `credentialId` equal to the credential being deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RotateCredential {
    /// The new unencrypted OpenSSH or PEM private key.
    pub private_key: String,
    /// Must carry `credentialId` equal to the credential being rotated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
}

#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateCredential {
    /// Display name (1-120 characters).
    pub name: String,
    /// `ssh-private-key`.
    pub kind: SshCredentialKind,
    /// Unencrypted OpenSSH or PEM private key. Stored only in a Secret; never returned.
    pub private_key: String,
    /// Login name servers use with this key unless they set their own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

impl CreateCredential {
    /// The rules of the name and the username; the key is parsed by the shim after these.
    pub fn validate(&self) -> Checked {
        bounded("name", &self.name, NAME_MAX)?;
        match &self.username {
            Some(username) => check_username("username", username),
            None => Ok(()),
        }
    }
}

/// A login name: 1..=32 letters, digits, `_`, `-` and `.`, not starting with `-` (ssh would
/// read it as an option).
pub fn check_username(field: &str, username: &str) -> Checked {
    bounded(field, username, USERNAME_MAX)?;
    let valid = username
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !username.starts_with('-');
    if !valid {
        return Err(FieldError::new(
            field,
            format!(
                "{field} may hold letters, digits, '_', '-' and '.', and may not start with '-'"
            ),
        ));
    }
    Ok(())
}

/// The SSH credential record of spec §2.2; never the private key.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct CredentialRecord {
    pub id: String,
    pub name: String,
    /// Always `ssh-private-key`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    pub public_key_configured: bool,
    pub private_key_configured: bool,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotated_at: Option<String>,
    /// The OpenSSH public key line, for a server's `authorized_keys` (not secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// SHA-256 fingerprint of the key (`SHA256:…`), as `ssh-keygen -l` prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// `{ items }` of `GET /credentials/ssh`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct CredentialList {
    pub items: Vec<CredentialRecord>,
}

/// The credential part of a rotation result.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct RotatedCredentialRecord {
    pub id: String,
    pub kind: String,
    pub username_configured: bool,
    pub public_key_configured: bool,
    pub private_key_configured: bool,
    pub rotated_at: String,
}

/// `GET /credentials/ssh/{credentialId}`.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialShow {
    /// `credentials.show/v1`.
    pub schema_version: String,
    pub credential: CredentialRecord,
    /// The servers using the credential (with `includeUsage=true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<SshCredentialUsage>,
    pub generated_at: String,
}

/// `POST /credentials/ssh/{credentialId}/rotate`.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedCredential {
    /// `credentials.rotate-ssh/v1`.
    pub schema_version: String,
    pub credential: RotatedCredentialRecord,
    /// The servers whose next connection uses the new key.
    pub affected_usage: SshCredentialUsage,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(name: &str, username: Option<&str>) -> CreateCredential {
        CreateCredential {
            name: name.into(),
            kind: SshCredentialKind::SshPrivateKey,
            private_key: "key".into(),
            username: username.map(str::to_string),
        }
    }

    #[test]
    fn usernames_are_login_names() {
        assert!(check_username("username", "deploy_user.1").is_ok());
        for bad in ["", "-x", "a b", &"a".repeat(33)] {
            assert_eq!(
                check_username("username", bad).unwrap_err().field,
                "username"
            );
        }
    }

    #[test]
    fn a_new_credential_names_the_field_it_refuses() {
        assert!(create("deploy key", None).validate().is_ok());
        assert!(create("deploy key", Some("deploy")).validate().is_ok());
        let long = "n".repeat(121);
        for (body, field) in [
            (create("", None), "name"),
            (create(&long, None), "name"),
            (create("deploy key", Some("-oX")), "username"),
        ] {
            assert_eq!(body.validate().unwrap_err().field, field);
        }
    }
}
