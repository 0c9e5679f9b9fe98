//! Why a certificate is requested: a Certificate's spec and the REST API's request.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `providerKey` of a certificate Berth obtains by ACME (the default).
pub const ACME_PROVIDER: &str = "acme";

/// Why a certificate is requested.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CertificateReason {
    #[default]
    Issue,
    Renew,
    Replace,
}
