//! Deployment timelines: every attempt's steps, platform messages and build output, in the
//! order they were recorded, kept after the attempt and its Deployment object are gone.

use std::time::Duration;

use berth_crds::progress::ProgressEvent;

use crate::StoreError;

/// Which attempt a timeline belongs to: Deployment names are unique per namespace only, and
/// the resource is kept so a timeline is found (and authorized) through its resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimelineKey {
    pub namespace: String,
    pub resource: String,
    pub deployment: String,
}

impl TimelineKey {
    pub fn new(
        namespace: impl Into<String>,
        resource: impl Into<String>,
        deployment: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            resource: resource.into(),
            deployment: deployment.into(),
        }
    }
}

/// One stored entry; `sequence` increases in the order entries were recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    pub sequence: i64,
    pub event: ProgressEvent,
}

/// Where deployment timelines are kept: the controller appends (through an
/// [`ObservationWriter`](crate::ObservationWriter)), the shim pages through them.
pub trait TimelineStore: Send + Sync {
    /// Adds `events` to the end of `key`'s timeline, all or none.
    fn append(&self, key: &TimelineKey, events: &[ProgressEvent]) -> Result<(), StoreError>;
    /// Up to `limit` entries of `key`'s timeline recorded after `after` (0: from the start).
    fn read(
        &self,
        key: &TimelineKey,
        after: i64,
        limit: usize,
    ) -> Result<Vec<TimelineEntry>, StoreError>;
    /// How many entries `key`'s timeline holds.
    fn count(&self, key: &TimelineKey) -> Result<i64, StoreError>;
    /// The attempts of one resource that have a timeline, by Deployment name in order.
    fn attempts(&self, namespace: &str, resource: &str) -> Result<Vec<String>, StoreError>;
    /// Removes timeline entries recorded more than `retention` ago; returns how many went.
    fn prune(&self, retention: Duration) -> Result<usize, StoreError>;
}
