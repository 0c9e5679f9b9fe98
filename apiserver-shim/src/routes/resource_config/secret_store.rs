//! Where a Resource's secret values are stored: the Secret it owns (`spec.secretsRef`, by
//! default `<resource>-secrets`), one data key per entry named `<exposure>.<KEY>`, with when
//! the shim last wrote each; read back only masked.

use berth_api::variables::VariableEntry;
use berth_crds::masking::MASK;
use berth_crds::resource::Resource;
use berth_crds::variable::parse_secret_data_key;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;

use crate::domain::objects::owned_secret;
pub use crate::domain::secret_values::now;
use crate::domain::secret_values::{Change, SecretValues, updated_at};
use crate::domain::time::timestamp;
use crate::domain::variables::exposure_name;
use crate::error::ApiResult;
use crate::state::AppState;

/// Label naming the Resource a secrets Secret belongs to.
const RESOURCE_LABEL: &str = "berth.dev/resource";

/// Where `resource`'s secret values are kept.
fn values(resource: &Resource) -> SecretValues<'_, Resource> {
    SecretValues {
        owner: resource,
        name: secret_name(resource),
        label: RESOURCE_LABEL,
    }
}

/// Name of the Secret holding a resource's secret values.
pub fn secret_name(resource: &Resource) -> String {
    berth_crds::config::secret_name(resource)
}

/// The resource's Secret, if it exists.
pub async fn fetch(state: &AppState, resource: &Resource) -> ApiResult<Option<Secret>> {
    values(resource).fetch(state).await
}

/// The secret entries a Secret holds, masked, sorted by exposure and key.
pub fn entries(resource: &Resource, secret: Option<&Secret>) -> Vec<VariableEntry> {
    let Some(secret) = secret else {
        return Vec::new();
    };
    let updated = updated_at(secret);
    let created = secret.metadata.creation_timestamp.as_ref().map(timestamp);
    let mut items: Vec<VariableEntry> = secret
        .data
        .iter()
        .flatten()
        .map(|(name, _)| {
            let (exposure, key) = parse_secret_data_key(name);
            VariableEntry {
                resource_id: resource.name_any(),
                key: key.to_string(),
                value: MASK.to_string(),
                scope: "resource".into(),
                exposure: exposure_name(exposure).into(),
                is_secret: true,
                kind: "secret".into(),
                updated_at: updated.get(name).cloned().or_else(|| created.clone()),
            }
        })
        .collect();
    items.sort_by(|a, b| (&a.exposure, &a.key).cmp(&(&b.exposure, &b.key)));
    items
}

/// Applies secret value changes (`None` deletes) to the resource's Secret, creating it owned
/// by the Resource when missing. Returns the Secret as it was, for a rollback.
pub async fn write(
    state: &AppState,
    resource: &Resource,
    changes: &[Change],
) -> ApiResult<Option<Secret>> {
    values(resource).write(state, changes).await
}

/// Puts a Secret back as it was before a failed multi-object write.
pub async fn restore(state: &AppState, resource: &Resource, before: Option<Secret>) {
    values(resource).restore(state, before).await
}

/// An empty Secret `name` owned by `resource` (deleted with it).
pub(super) fn new_secret(resource: &Resource, name: &str) -> Secret {
    owned_secret(resource, RESOURCE_LABEL, name, "Opaque")
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_crds::variable::VariableExposure;

    #[test]
    fn data_keys_carry_the_exposure() {
        assert_eq!(
            berth_crds::variable::secret_data_key(VariableExposure::BuildTime, "NPM_TOKEN"),
            "build-time.NPM_TOKEN"
        );
        assert_eq!(
            parse_secret_data_key("runtime.API_KEY"),
            (VariableExposure::Runtime, "API_KEY")
        );
        assert_eq!(
            parse_secret_data_key("HAND_MADE"),
            (VariableExposure::Runtime, "HAND_MADE")
        );
    }
}
