//! A preview's own databases, decided without I/O: for each managed database the resource
//! binds, one of the same kind and image in the preview's environment (so on a private network
//! of its own, reachable only by the preview's app), filled — when the policy says
//! `latest-backup` — from the newest ready backup of the bound one by a restore the preview owns.
//! The copy of the resource binds them in place of production's.

use std::collections::BTreeMap;

use berth_crds::backup::{
    BackupStatus, DependencyResourceBackup, DependencyResourceRestore,
    DependencyResourceRestoreSpec, RestoreStatus,
};
use berth_crds::condition::{ConditionStatus, READY, find};
use berth_crds::dependency_resource::{
    DELETE_DATA_ANNOTATION, DependencyResource, DependencyResourceSpec, DependencySource,
    SKIP_FINAL_BACKUP_ANNOTATION,
};
use berth_crds::limits::NAME_MAX;
use berth_crds::preview::{
    PreviewDatabase, PreviewDatabases, PreviewEnvironment, PreviewSeed, preview_dependency_name,
};
use berth_crds::resource::DependencyBinding;
use kube::ResourceExt;

use super::plan::{environment_name, owned_meta};

/// The preview's own database in place of `bound`: its kind, image and server, none of its
/// exposure; its data and final backup go with it when the preview closes.
pub fn dependency(preview: &PreviewEnvironment, bound: &DependencyResource) -> DependencyResource {
    let name = preview_dependency_name(&preview.name_any(), &bound.name_any());
    let number = preview.spec.source.pull_request_number;
    let spec = DependencyResourceSpec {
        kind: bound.spec.kind,
        project_id: preview.spec.project_id.clone(),
        environment_id: environment_name(preview),
        server_id: bound.spec.server_id.clone(),
        name: format!("{} PR #{number}", bound.spec.name)
            .chars()
            .take(NAME_MAX)
            .collect(),
        description: None,
        image: bound.spec.image.clone(),
        exposure: None,
        source: DependencySource::Managed,
        connection_secret_ref: None,
        major_version_upgrade: None,
        rotate_credentials: None,
    };
    let mut own = DependencyResource::new(&name, spec);
    own.metadata = owned_meta(preview, name.clone());
    own.metadata.annotations = Some(BTreeMap::from([
        (DELETE_DATA_ANNOTATION.to_string(), name.clone()),
        (SKIP_FINAL_BACKUP_ANNOTATION.to_string(), name),
    ]));
    own
}

/// Whether the preview gets a database of its own in place of `bound` (Berth runs only
/// managed ones; an imported one is production's and is not copied).
pub fn copied(policy: PreviewDatabases, bound: &DependencyResource) -> bool {
    policy != PreviewDatabases::None && bound.spec.source == DependencySource::Managed
}

/// The copy's bindings: each bound database replaced by the preview's own (`own`: bound id →
/// own id); one the preview has none of is left out.
pub fn rebind(
    bindings: &[DependencyBinding],
    own: &BTreeMap<String, String>,
) -> Vec<DependencyBinding> {
    bindings
        .iter()
        .filter_map(|binding| {
            let id = own.get(&binding.dependency_resource_id)?;
            Some(DependencyBinding {
                dependency_resource_id: id.clone(),
                ..binding.clone()
            })
        })
        .collect()
}

/// The newest ready (test-restored) backup of database `of` among `backups`.
pub fn newest_ready<'a>(
    backups: &'a [DependencyResourceBackup],
    of: &str,
) -> Option<&'a DependencyResourceBackup> {
    backups
        .iter()
        .filter(|b| b.spec.dependency_resource_id == of)
        .filter(|b| b.metadata.deletion_timestamp.is_none())
        .filter(|b| {
            b.status
                .as_ref()
                .is_some_and(|s| s.status == BackupStatus::Ready)
        })
        .max_by_key(|b| {
            let completed = b.status.as_ref().and_then(|s| s.completed_at.clone());
            (
                completed.map(|t| t.0),
                b.metadata.creation_timestamp.clone().map(|t| t.0),
            )
        })
}

/// The name of the restore that fills the preview's database `own`.
pub fn restore_name(own: &str) -> String {
    format!("{own}-seed")
}

/// The restore of `backup` into the preview's database `own`.
pub fn seed_restore(
    preview: &PreviewEnvironment,
    own: &str,
    backup: &str,
) -> DependencyResourceRestore {
    let number = preview.spec.source.pull_request_number;
    let mut restore = DependencyResourceRestore::new(
        &restore_name(own),
        DependencyResourceRestoreSpec {
            backup_id: backup.to_string(),
            target_dependency_resource_id: own.to_string(),
            acknowledge_data_overwrite: true,
            restore_label: Some(format!("seed of pull request #{number}'s preview")),
        },
    );
    restore.metadata = owned_meta(preview, restore_name(own));
    restore
}

/// What is known of one preview database at a reconcile.
pub struct Seen<'a> {
    pub bound: &'a str,
    pub own: &'a DependencyResource,
    /// The backup to fill it from (`None`: it starts empty).
    pub backup: Option<&'a str>,
    /// Whether the policy asked for a backup's data.
    pub wants_backup: bool,
    pub restore: Option<&'a DependencyResourceRestore>,
}

/// How a preview database's filling stands, and whether its restore is to be started now.
pub fn seed(seen: &Seen) -> (PreviewDatabase, bool) {
    let own = seen.own.name_any();
    let record = |seed, message: Option<String>| PreviewDatabase {
        dependency_resource_id: seen.bound.to_string(),
        preview_dependency_resource_id: own.clone(),
        seed,
        backup_id: seen.backup.map(str::to_string),
        message,
    };
    let Some(backup) = seen.backup else {
        let why = seen.wants_backup.then(|| {
            format!(
                "{} has no ready backup; the preview's database starts empty",
                seen.bound
            )
        });
        return (record(PreviewSeed::Empty, why), false);
    };
    let Some(restore) = seen.restore else {
        let ready = seen
            .own
            .status
            .as_ref()
            .and_then(|s| find(&s.conditions, READY));
        if ready.is_some_and(|c| c.status == ConditionStatus::True) {
            return (
                record(
                    PreviewSeed::Restoring,
                    Some(format!("restoring backup {backup}")),
                ),
                true,
            );
        }
        let waiting = format!("waiting for {own} to be ready before restoring backup {backup}");
        return (record(PreviewSeed::Waiting, Some(waiting)), false);
    };
    let status = restore.status.clone().unwrap_or_default();
    let state = match status.status {
        RestoreStatus::Pending => record(
            PreviewSeed::Restoring,
            Some(format!("restoring backup {backup}")),
        ),
        RestoreStatus::Completed => record(PreviewSeed::Restored, None),
        RestoreStatus::Failed => {
            let why = status
                .failure_message
                .unwrap_or_else(|| "the restore failed".into());
            record(
                PreviewSeed::Failed,
                Some(format!("restore {}: {why}", restore.name_any())),
            )
        }
    };
    (state, false)
}

#[cfg(test)]
mod tests {
    use berth_crds::preview::{PreviewEnvironmentSpec, PreviewProvider, PullRequestSource};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    use super::*;

    fn preview() -> PreviewEnvironment {
        let mut preview = PreviewEnvironment::new(
            "web-pr-3",
            PreviewEnvironmentSpec {
                project_id: "shop".into(),
                resource_id: "web".into(),
                source: PullRequestSource {
                    provider: PreviewProvider::Api,
                    repository_full_name: "acme/shop".into(),
                    head_repository_full_name: "acme/shop".into(),
                    head_repository_url: "http://git.test/acme/shop.git".into(),
                    pull_request_number: 3,
                    base_ref: "main".into(),
                    head_ref: "feature".into(),
                    head_sha: "0123456789abcdef".into(),
                },
                with_secrets: false,
                pushed_at: Time("2026-12-01T00:00:00Z".parse().unwrap()),
            },
        );
        preview.metadata.namespace = Some("org-a".into());
        preview.metadata.uid = Some("uid-1".into());
        preview
    }

    fn database(name: &str, source: &str, ready: &str) -> DependencyResource {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResource",
            "metadata": {"name": name, "namespace": "org-a"},
            "spec": {"kind": "postgres", "projectId": "shop", "environmentId": "prod",
                     "serverId": "edge", "name": "Orders", "image": "postgres:16",
                     "source": source, "exposure": {"hostPort": 15432, "allowFrom": ["198.18.0.1/32"]}},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "R",
                        "message": "", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}
        }))
        .unwrap()
    }

    fn backup(name: &str, of: &str, status: &str, completed: &str) -> DependencyResourceBackup {
        serde_json::from_value(json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "DependencyResourceBackup",
            "metadata": {"name": name, "namespace": "org-a"},
            "spec": {"dependencyResourceId": of, "targetId": "offsite"},
            "status": {"status": status, "completedAt": completed}
        }))
        .unwrap()
    }

    #[test]
    fn the_preview_database_is_its_own_of_the_same_kind_without_exposure_and_goes_with_its_data() {
        let own = dependency(&preview(), &database("db", "managed", "True"));
        assert_eq!(own.name_any(), "web-pr-3-db");
        assert_eq!(own.spec.environment_id, "web-pr-3-env");
        assert_eq!(own.spec.image.as_deref(), Some("postgres:16"));
        assert!(own.spec.exposure.is_none(), "not reachable from outside");
        let annotations = own.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations[DELETE_DATA_ANNOTATION], "web-pr-3-db");
        assert!(copied(
            PreviewDatabases::Empty,
            &database("db", "managed", "True")
        ));
        assert!(!copied(
            PreviewDatabases::Empty,
            &database("db", "imported", "True")
        ));
        assert!(!copied(
            PreviewDatabases::None,
            &database("db", "managed", "True")
        ));
        let bindings: Vec<DependencyBinding> = serde_json::from_value(json!([
            {"dependencyResourceId": "db", "targetName": "DATABASE_URL"},
            {"dependencyResourceId": "external", "targetName": "LEGACY_URL"}
        ]))
        .unwrap();
        let own_ids = BTreeMap::from([("db".to_string(), "web-pr-3-db".to_string())]);
        let rebound = rebind(&bindings, &own_ids);
        assert_eq!(rebound.len(), 1, "production's imported one is not bound");
        assert_eq!(rebound[0].dependency_resource_id, "web-pr-3-db");
        assert_eq!(rebound[0].target_name, "DATABASE_URL");
    }

    #[test]
    fn the_newest_ready_backup_fills_it_once_it_is_ready() {
        let backups = [
            backup("old", "db", "ready", "2026-12-01T00:00:00Z"),
            backup("new", "db", "ready", "2026-12-02T00:00:00Z"),
            backup("broken", "db", "failed", "2026-12-03T00:00:00Z"),
            backup("other", "cache", "ready", "2026-12-04T00:00:00Z"),
        ];
        let newest = newest_ready(&backups, "db").map(|b| b.name_any());
        assert_eq!(newest.as_deref(), Some("new"));
        let starting = database("web-pr-3-db", "managed", "False");
        let seen = Seen {
            bound: "db",
            own: &starting,
            backup: Some("new"),
            wants_backup: true,
            restore: None,
        };
        let (record, start) = seed(&seen);
        assert_eq!((record.seed, start), (PreviewSeed::Waiting, false));
        let ready = database("web-pr-3-db", "managed", "True");
        let seen = Seen {
            own: &ready,
            ..seen
        };
        let (record, start) = seed(&seen);
        assert_eq!((record.seed, start), (PreviewSeed::Restoring, true));
        let mut restore = seed_restore(&preview(), "web-pr-3-db", "new");
        assert_eq!(restore.name_any(), "web-pr-3-db-seed");
        assert!(restore.spec.acknowledge_data_overwrite);
        restore.status = Some(Default::default());
        let pending = restore.clone();
        let restoring = seed(&Seen {
            restore: Some(&pending),
            ..seen
        });
        assert_eq!(restoring.0.seed, PreviewSeed::Restoring);
        restore.status.as_mut().unwrap().status = RestoreStatus::Failed;
        restore.status.as_mut().unwrap().failure_message = Some("the dump is corrupt".into());
        let (failed, _) = seed(&Seen {
            restore: Some(&restore),
            ..seen
        });
        assert_eq!(failed.seed, PreviewSeed::Failed);
        assert!(failed.message.unwrap().contains("the dump is corrupt"));
        let (empty, start) = seed(&Seen {
            backup: None,
            restore: None,
            ..seen
        });
        assert_eq!((empty.seed, start), (PreviewSeed::Empty, false));
        assert!(empty.message.unwrap().contains("no ready backup"));
    }
}
