//! Spec §4.9, SSH credentials.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::Confirmation;

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
