//! Pieces several request bodies share.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `confirmation` object of destructive calls (spec §5): it repeats the target id.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Confirmation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_slug: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_volume_id: Option<String>,
}

/// `{ "id": … }`: what create and delete calls return.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct IdResponse {
    /// Id of the object created or changed.
    pub id: String,
}

/// `{ "count": … }`.
#[derive(Serialize, Deserialize, JsonSchema, Debug)]
pub struct CountResponse {
    pub count: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::DeleteResource;

    #[test]
    fn a_request_the_cli_sends_is_what_the_shim_reads() {
        let body = DeleteResource {
            confirmation: Some(Confirmation {
                resource_slug: Some("web".into()),
                ..Confirmation::default()
            }),
            idempotency_key: None,
        };
        let sent = serde_json::to_value(&body).unwrap();
        // Absent fields are left out, not sent as null.
        assert_eq!(
            sent,
            serde_json::json!({"confirmation": {"resourceSlug": "web"}})
        );
        let read: DeleteResource = serde_json::from_value(sent).unwrap();
        let confirmation = read.confirmation.unwrap();
        assert_eq!(confirmation.resource_slug.as_deref(), Some("web"));
        assert_eq!(confirmation.project_id, None);
    }

    #[test]
    fn unknown_fields_are_refused_as_before() {
        let read = serde_json::from_value::<Confirmation>(serde_json::json!({"slug": "web"}));
        assert!(read.is_err());
    }
}
