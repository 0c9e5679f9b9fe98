//! Making a preview's own databases as its policy says (`database_plan` decides): each managed
//! database the resource binds gets one of its own, and with `latest-backup` a restore of the
//! bound one's newest ready backup into it, started once it is ready.

use std::collections::BTreeMap;

use berth_crds::backup::{DependencyResourceBackup, DependencyResourceRestore};
use berth_crds::dependency_resource::DependencyResource;
use berth_crds::preview::{PreviewDatabase, PreviewDatabases, PreviewEnvironment};
use berth_crds::resource::Resource;
use kube::api::PostParams;
use kube::{Api, ResourceExt};

use super::apply_object;
use super::database_plan::{self as plan, Seen};
use crate::context::Context;
use crate::error::Result;

/// The preview's own databases: which it binds in place of which, and how each stands.
#[derive(Default)]
pub struct Own {
    /// Bound database id → the preview's own.
    pub ids: BTreeMap<String, String>,
    pub records: Vec<PreviewDatabase>,
}

impl Own {
    /// Whether every database is ready to deploy on (empty, or filled from its backup).
    pub fn settled(&self) -> bool {
        self.records.iter().all(|r| r.seed.settled())
    }
}

/// Makes (or brings up to date) the preview's own database for each managed one `base` binds,
/// and starts filling those whose backup can now be restored.
pub async fn make(
    preview: &PreviewEnvironment,
    context: &Context,
    namespace: &str,
    base: &Resource,
    policy: PreviewDatabases,
) -> Result<Own> {
    let mut own = Own::default();
    if policy == PreviewDatabases::None || base.spec.dependency_bindings.is_empty() {
        return Ok(own);
    }
    let client = &context.client;
    let dependencies = Api::<DependencyResource>::namespaced(client.clone(), namespace);
    let restores = Api::<DependencyResourceRestore>::namespaced(client.clone(), namespace);
    let wants_backup = policy == PreviewDatabases::LatestBackup;
    let backups = if wants_backup {
        let backups = Api::<DependencyResourceBackup>::namespaced(client.clone(), namespace);
        backups.list(&Default::default()).await?.items
    } else {
        Vec::new()
    };
    for binding in &base.spec.dependency_bindings {
        let bound_id = &binding.dependency_resource_id;
        let Some(bound) = dependencies.get_opt(bound_id).await? else {
            continue;
        };
        if !plan::copied(policy, &bound) {
            continue;
        }
        let made = apply_object(&dependencies, &plan::dependency(preview, &bound)).await?;
        let made_id = made.name_any();
        let restore = if wants_backup {
            restores.get_opt(&plan::restore_name(&made_id)).await?
        } else {
            None
        };
        // Once started, a filling keeps its backup even if a newer one appears.
        let backup = restore
            .as_ref()
            .map(|r| r.spec.backup_id.clone())
            .or_else(|| plan::newest_ready(&backups, bound_id).map(|b| b.name_any()));
        let seen = Seen {
            bound: bound_id,
            own: &made,
            backup: backup.as_deref(),
            wants_backup,
            restore: restore.as_ref(),
        };
        let (record, start) = plan::seed(&seen);
        if start && let Some(backup) = &backup {
            let restore = plan::seed_restore(preview, &made_id, backup);
            match restores.create(&PostParams::default(), &restore).await {
                Ok(_) => {
                    tracing::info!(preview = %preview.name_any(), %backup, "preview: filling its database")
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(error) => return Err(error.into()),
            }
        }
        own.ids.insert(bound_id.clone(), made_id);
        own.records.push(record);
    }
    Ok(own)
}
