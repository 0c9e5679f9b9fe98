//! An environment's secret values: kept in the Secret it owns
//! (`berth_crds::config::environment_secret_name`), given to every resource of the environment
//! that does not set the same variable itself, shown only masked.

use berth_api::environments::MaskedVariable;
use berth_crds::config::environment_secret_name;
use berth_crds::environment::Environment;
use berth_crds::masking::MASK;
use berth_crds::variable::parse_secret_data_key;
use kube::ResourceExt;

use crate::domain::secret_values::SecretValues;
use crate::domain::variables::exposure_name;
use crate::error::ApiResult;
use crate::state::AppState;

/// Label naming the Environment a secrets Secret belongs to.
const ENVIRONMENT_LABEL: &str = "berth.dev/environment";

/// Where `environment`'s secret values are kept.
pub fn values(environment: &Environment) -> SecretValues<'_, Environment> {
    SecretValues {
        owner: environment,
        name: environment_secret_name(&environment.name_any()),
        label: ENVIRONMENT_LABEL,
    }
}

/// The environment's secret entries, masked, sorted by exposure and key.
pub async fn masked_entries(
    state: &AppState,
    environment: &Environment,
) -> ApiResult<Vec<MaskedVariable>> {
    let secret = values(environment).fetch(state).await?;
    let mut entries: Vec<MaskedVariable> = secret
        .iter()
        .flat_map(|s| s.data.iter().flatten())
        .map(|(data_key, _)| {
            let (exposure, key) = parse_secret_data_key(data_key);
            MaskedVariable {
                key: key.to_string(),
                value: MASK.to_string(),
                scope: "environment".into(),
                exposure: exposure_name(exposure).into(),
                is_secret: true,
                kind: "secret".into(),
            }
        })
        .collect();
    entries.sort_by(|a, b| (&a.exposure, &a.key).cmp(&(&b.exposure, &b.key)));
    Ok(entries)
}

/// Copies `from`'s secret values into `into` (a clone or a promotion): `into`'s entries of the
/// same key and exposure are replaced, its others kept.
pub async fn copy(state: &AppState, from: &Environment, into: &Environment) -> ApiResult<()> {
    let Some(data) = values(from).fetch(state).await?.and_then(|s| s.data) else {
        return Ok(());
    };
    let changes: Vec<_> = data
        .iter()
        .filter_map(|(data_key, bytes)| {
            let (exposure, key) = parse_secret_data_key(data_key);
            let value = String::from_utf8(bytes.0.clone()).ok()?;
            Some((exposure, key.to_string(), Some(value)))
        })
        .collect();
    if !changes.is_empty() {
        values(into).write(state, &changes).await?;
    }
    Ok(())
}
