//! Access-failure lookups (spec §2.2 "Access failure lookup"): the evidence of a failed
//! request and the ids it concerns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::access_failure::AccessFailureEvidence;

/// Spec §2.2 "Access failure lookup".
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
#[serde(rename_all = "camelCase")]
pub struct AccessFailureLookup {
    pub schema_version: String,
    pub request_id: String,
    pub generated_at: String,
    pub filters: Filters,
    /// `found`: a lookup that finds nothing is a 404.
    pub status: String,
    pub matched_source: String,
    pub evidence: AccessFailureEvidence,
    pub related_ids: RelatedIds,
    pub next_action: String,
    pub captured_at: String,
    pub expires_at: String,
}

/// The filters of the query, as given.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Filters {
    pub resource_id: Option<String>,
    pub hostname: Option<String>,
    pub path: Option<String>,
}

/// Ids of the objects the evidence concerns; `null` where it concerns none.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RelatedIds {
    pub resource_id: Option<String>,
    pub deployment_id: Option<String>,
    pub domain_binding_id: Option<String>,
    pub server_id: Option<String>,
    pub destination_id: Option<String>,
    pub route_id: Option<String>,
}
