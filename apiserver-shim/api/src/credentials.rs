//! Spec §4.9, SSH credentials.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;

// Shared with the CRDs: defined in `berth-vocabulary`.
pub use berth_vocabulary::credentials::SshCredentialKind;

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
