//! The two kinds of backup policy, as the policy controller sees them: what each backs up, and
//! the backup it takes at a slot.

use std::fmt::Debug;

use berth_crds::backup::{
    DEPENDENCY_LABEL, DependencyResourceBackup, DependencyResourceBackupSpec, PolicySlot,
};
use berth_crds::backup_policy::{
    BackupPolicyStatus, DependencyResourceBackupPolicy, PolicyRules, StorageVolumeBackupPolicy,
};
use berth_crds::volume_backup::{
    STORAGE_VOLUME_LABEL, StorageVolumeBackup, StorageVolumeBackupSpec,
};
use kube::api::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::removal::StoredBackup;

/// What a policy backs up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject<'a> {
    Dependency(&'a str),
    Volume(&'a str),
}

impl<'a> Subject<'a> {
    /// The spec field naming it, and its id.
    pub fn field_and_id(self) -> (&'static str, &'a str) {
        match self {
            Self::Dependency(id) => ("dependencyResourceId", id),
            Self::Volume(id) => ("storageVolumeId", id),
        }
    }

    /// The label its backups carry naming it, and its id.
    pub fn label(self) -> (&'static str, &'a str) {
        match self {
            Self::Dependency(id) => (DEPENDENCY_LABEL, id),
            Self::Volume(id) => (STORAGE_VOLUME_LABEL, id),
        }
    }
}

/// A kind of backup policy.
pub trait BackupPolicy:
    kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
    /// The backups it takes.
    type Backup: StoredBackup + Serialize + Send + Sync + 'static;
    const KIND: &'static str;

    fn rules(&self) -> &PolicyRules;
    fn target_id(&self) -> &str;
    fn subject(&self) -> Subject<'_>;
    fn policy_status(&self) -> Option<&BackupPolicyStatus>;
    /// A backup of what it backs up to its target, with `metadata`: a slot's, or (with no
    /// slot) the final one before a deletion.
    fn backup(
        &self,
        metadata: ObjectMeta,
        slot: PolicySlot,
        description: Option<String>,
    ) -> Self::Backup;
}

impl BackupPolicy for DependencyResourceBackupPolicy {
    type Backup = DependencyResourceBackup;
    const KIND: &'static str = "DependencyResourceBackupPolicy";

    fn rules(&self) -> &PolicyRules {
        &self.spec.rules
    }
    fn target_id(&self) -> &str {
        &self.spec.target_id
    }
    fn subject(&self) -> Subject<'_> {
        Subject::Dependency(&self.spec.dependency_resource_id)
    }
    fn policy_status(&self) -> Option<&BackupPolicyStatus> {
        self.status.as_ref()
    }
    fn backup(
        &self,
        metadata: ObjectMeta,
        slot: PolicySlot,
        description: Option<String>,
    ) -> Self::Backup {
        DependencyResourceBackup {
            metadata,
            spec: DependencyResourceBackupSpec {
                dependency_resource_id: self.spec.dependency_resource_id.clone(),
                target_id: self.spec.target_id.clone(),
                description,
                slot,
                uploaded: None,
            },
            status: None,
        }
    }
}

impl BackupPolicy for StorageVolumeBackupPolicy {
    type Backup = StorageVolumeBackup;
    const KIND: &'static str = "StorageVolumeBackupPolicy";

    fn rules(&self) -> &PolicyRules {
        &self.spec.rules
    }
    fn target_id(&self) -> &str {
        &self.spec.target_id
    }
    fn subject(&self) -> Subject<'_> {
        Subject::Volume(&self.spec.storage_volume_id)
    }
    fn policy_status(&self) -> Option<&BackupPolicyStatus> {
        self.status.as_ref()
    }
    fn backup(
        &self,
        metadata: ObjectMeta,
        slot: PolicySlot,
        description: Option<String>,
    ) -> Self::Backup {
        StorageVolumeBackup {
            metadata,
            spec: StorageVolumeBackupSpec {
                storage_volume_id: self.spec.storage_volume_id.clone(),
                server_id: self.spec.server_id.clone(),
                target_id: self.spec.target_id.clone(),
                description,
                consistency: self.spec.consistency,
                slot,
            },
            status: None,
        }
    }
}
