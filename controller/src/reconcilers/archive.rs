//! Archiving is a status transition shared by projects and environments: the object stays,
//! `archivedAt` is stamped once, and history remains readable.

use berth_crds::condition::Condition;
use berth_crds::lifecycle::LifecycleStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::conditions::Stamp;

/// The lifecycle fields an object's status should carry.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveState {
    pub lifecycle: LifecycleStatus,
    pub archived_at: Option<Time>,
    pub archive_reason: Option<String>,
}

/// Plans the lifecycle fields from the spec's `archived` flag and what status already says.
/// `archivedAt` keeps its first value while the object stays archived.
pub fn plan(
    archived: bool,
    reason: Option<&str>,
    current_archived_at: Option<&Time>,
    now: Timestamp,
) -> ArchiveState {
    if !archived {
        return ArchiveState {
            lifecycle: LifecycleStatus::Active,
            archived_at: None,
            archive_reason: None,
        };
    }
    ArchiveState {
        lifecycle: LifecycleStatus::Archived,
        archived_at: Some(current_archived_at.cloned().unwrap_or(Time(now))),
        archive_reason: reason.map(str::to_string),
    }
}

/// The `Archived` condition for a planned state.
pub fn condition(state: &ArchiveState, stamp: Stamp) -> Condition {
    match state.lifecycle {
        LifecycleStatus::Archived => stamp.archived(
            state
                .archive_reason
                .clone()
                .unwrap_or_else(|| "archived".into()),
        ),
        LifecycleStatus::Active => stamp.active(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn archiving_stamps_now_once() {
        let first = plan(true, Some("done"), None, at("2026-01-01T00:00:00Z"));
        assert_eq!(first.lifecycle, LifecycleStatus::Archived);
        assert_eq!(first.archived_at, Some(Time(at("2026-01-01T00:00:00Z"))));
        let later = plan(
            true,
            Some("done"),
            first.archived_at.as_ref(),
            at("2026-02-01T00:00:00Z"),
        );
        assert_eq!(later.archived_at, first.archived_at);
        assert_eq!(later.archive_reason.as_deref(), Some("done"));
    }

    #[test]
    fn restoring_clears_archive_fields() {
        let state = plan(false, Some("ignored"), None, Timestamp::now());
        assert_eq!(state.lifecycle, LifecycleStatus::Active);
        assert!(state.archived_at.is_none() && state.archive_reason.is_none());
    }
}
