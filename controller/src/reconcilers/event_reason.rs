//! Reasons of the Events reconcilers publish, Normal and Warning alike, so `kubectl get events`
//! filters and tests match one spelling. Reasons shared with a condition stay beside it
//! (`deployment::waiting`, `domain_binding::decide::SERVED_EVENT`, the certificate's
//! `reason`s, the threshold evaluator's `THRESHOLD_*`); failures use `Error::event_reason`.

// Normal: something the controller did or noticed that needs no action.

/// A stopped, removed or changed container of a resource was put back as declared.
pub const DRIFT_REPAIRED: &str = "DriftRepaired";
/// A container of an attempt that no longer serves was removed.
pub const STRAY_REMOVED: &str = "StrayRemoved";
/// The edge proxy had lost a resource's route; it was written again.
pub const ROUTE_RESTORED: &str = "RouteRestored";
/// An SSH credential's private key changed.
pub const KEY_ROTATED: &str = "KeyRotated";
/// A project or environment was archived.
pub const ARCHIVED: &str = "Archived";
/// A project or environment was restored from the archive.
pub const RESTORED: &str = "Restored";
/// A requested runtime stop succeeded.
pub const RUNTIME_STOPPED: &str = "RuntimeStopped";
/// A requested runtime start succeeded.
pub const RUNTIME_STARTED: &str = "RuntimeStarted";
/// A requested runtime restart succeeded.
pub const RUNTIME_RESTARTED: &str = "RuntimeRestarted";
/// An organization's namespace was created.
pub const NAMESPACE_CREATED: &str = "NamespaceCreated";
/// An organization's namespace is being deleted.
pub const NAMESPACE_DELETED: &str = "NamespaceDeleted";
/// A retention policy's dry run counted what it would delete.
pub const RETENTION_DRY_RUN: &str = "RetentionDryRun";
/// A retention policy deleted old records.
pub const RETENTION_PRUNED: &str = "RetentionPruned";
/// A server's edge proxy was removed.
pub const PROXY_REMOVED: &str = "ProxyRemoved";
/// A server answers over SSH (again).
pub const REACHABLE: &str = "Reachable";
/// A server's host key was pinned on first contact.
pub const HOST_KEY_PINNED: &str = "HostKeyPinned";
/// A server's edge proxy was started (or created, or recreated).
pub const PROXY_STARTED: &str = "ProxyStarted";
/// A dependency resource answered its health check for the first time.
pub const DEPENDENCY_READY: &str = "DependencyReady";
/// A degraded dependency resource answers its health check again.
pub const DEPENDENCY_RECOVERED: &str = "DependencyRecovered";
/// A managed PostgreSQL's major-version upgrade started (dump and restore).
pub const MAJOR_VERSION_UPGRADE_STARTED: &str = "MajorVersionUpgradeStarted";
/// It ended: the new version serves the data, the old volume is kept.
pub const MAJOR_VERSION_UPGRADED: &str = "MajorVersionUpgraded";
/// It was given up; the old version serves as before.
pub const MAJOR_VERSION_UPGRADE_FAILED: &str = "MajorVersionUpgradeFailed";
/// A deleted dependency resource's container and network were removed (the note says whether
/// the data volume was kept).
pub const DEPENDENCY_REMOVED: &str = "DependencyRemoved";
/// A managed database's previous login was revoked after every bound app moved to the new one.
pub const CREDENTIALS_ROTATED: &str = "CredentialsRotated";

// Warning: something a user may have to act on.

/// A requested deletion waits for the objects that still use this one.
pub const DELETION_BLOCKED: &str = "DeletionBlocked";
/// A resource's drift could not be repaired.
pub const DRIFT_REPAIR_FAILED: &str = "DriftRepairFailed";
/// A deleted resource's containers may be left on its server.
pub const CLEANUP_INCOMPLETE: &str = "CleanupIncomplete";
/// A deleted resource's route could not be removed from the edge proxy.
pub const ROUTE_NOT_REMOVED: &str = "RouteNotRemoved";
/// A runtime control request was refused.
pub const RUNTIME_CONTROL_BLOCKED: &str = "RuntimeControlBlocked";
/// A runtime control request failed.
pub const RUNTIME_CONTROL_FAILED: &str = "RuntimeControlFailed";
/// A server's edge proxy could not be removed.
pub const PROXY_NOT_REMOVED: &str = "ProxyNotRemoved";
/// A dependency resource that was ready fails its health check.
pub const DEPENDENCY_DEGRADED: &str = "DependencyDegraded";
/// A server presented another host key than the pinned one.
pub const HOST_KEY_MISMATCH: &str = "HostKeyMismatch";
/// A server does not answer over SSH.
pub const UNREACHABLE: &str = "Unreachable";
/// A preview environment passed its time to live without a push and is removed.
pub const PREVIEW_EXPIRED: &str = "PreviewExpired";
/// Something a preview environment made could not be removed from its server.
pub const PREVIEW_LEFTOVER: &str = "PreviewLeftover";
