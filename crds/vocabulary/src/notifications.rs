//! Notifications: what Berth tells a person without being asked, and where. The events a
//! channel can follow and the kinds of channel.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Something a person should hear of.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum NotificationEvent {
    /// A deployment attempt failed.
    DeploymentFailed,
    /// A deployment attempt succeeded (only when a channel asks for it).
    DeploymentSucceeded,
    /// A resource's health became unhealthy.
    ResourceUnhealthy,
    /// A resource that was unhealthy is healthy again.
    ResourceRecovered,
    /// Docker restarted a resource's container after it exited by itself.
    CrashLoop,
    /// A scheduled task's run failed.
    ScheduledTaskFailed,
    /// A scheduled task's slot passed without a run.
    ScheduledTaskMissed,
    /// A server could not be reached.
    ServerUnreachable,
    /// A monitoring threshold policy's rule was crossed (warning or critical).
    ThresholdCrossed,
    /// A certificate in use nears its expiry with no renewal in sight (an imported one past
    /// its renewal point, or one Berth renews whose renewal keeps failing), or has expired.
    CertificateExpiring,
    /// An attempt to obtain or renew a certificate failed (told once per run of failures).
    CertificateFailed,
    /// A backup could not be taken, stored or proven by its test restore.
    BackupFailed,
    /// A backup policy's slot passed while Berth could not back up (the controller was stopped
    /// or had no leader); the backup was taken late, on return.
    BackupLate,
    /// A channel's test message (`POST /notification-channels/{id}/test`).
    Test,
}

impl NotificationEvent {
    /// Every event, in a stable order.
    pub const ALL: [Self; 14] = [
        Self::DeploymentFailed,
        Self::DeploymentSucceeded,
        Self::ResourceUnhealthy,
        Self::ResourceRecovered,
        Self::CrashLoop,
        Self::ScheduledTaskFailed,
        Self::ScheduledTaskMissed,
        Self::ServerUnreachable,
        Self::ThresholdCrossed,
        Self::CertificateExpiring,
        Self::CertificateFailed,
        Self::BackupFailed,
        Self::BackupLate,
        Self::Test,
    ];

    /// The event as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DeploymentFailed => "deployment-failed",
            Self::DeploymentSucceeded => "deployment-succeeded",
            Self::ResourceUnhealthy => "resource-unhealthy",
            Self::ResourceRecovered => "resource-recovered",
            Self::CrashLoop => "crash-loop",
            Self::ScheduledTaskFailed => "scheduled-task-failed",
            Self::ScheduledTaskMissed => "scheduled-task-missed",
            Self::ServerUnreachable => "server-unreachable",
            Self::ThresholdCrossed => "threshold-crossed",
            Self::CertificateExpiring => "certificate-expiring",
            Self::CertificateFailed => "certificate-failed",
            Self::BackupFailed => "backup-failed",
            Self::BackupLate => "backup-late",
            Self::Test => "test",
        }
    }

    /// Whether a channel that names no events hears this one: every failure and recovery,
    /// not successes (opt-in) and not tests (always sent to the channel tested).
    pub fn followed_by_default(self) -> bool {
        !matches!(self, Self::DeploymentSucceeded | Self::Test)
    }
}

/// Where a channel delivers.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ChannelKind {
    /// A JSON POST, signed `X-Berth-Signature-256: sha256=<hex>` with the channel's secret.
    Webhook,
    /// A Slack incoming webhook (`{"text": …}`; Mattermost and Discord's Slack-compatible
    /// endpoints take it too).
    Slack,
    /// Mail over SMTP (STARTTLS unless turned off).
    Email,
}

/// How far a delivery is.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryStatus {
    /// Not delivered yet; tried again with backoff.
    Pending,
    Delivered,
    /// Every attempt failed; `lastError` says why.
    Failed,
}
