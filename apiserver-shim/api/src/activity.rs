//! What happens to an organization's objects: the change feed (`GET /events/stream`), one
//! event per change the shim's caches see, and the audit events (`GET /audit-events`, Appaloft
//! 1.10.5's `audit-events.list/v1` with Berth's actor and change fields), who changed what.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const CHANGE_SCHEMA_VERSION: &str = "events.change/v1";
pub const AUDIT_LIST_SCHEMA_VERSION: &str = "audit-events.list/v1";

/// The kinds of object the change feed reports.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    Resource,
    Deployment,
    Server,
    DomainBinding,
    ScheduledTask,
    ScheduledTaskRun,
    NotificationChannel,
    NotificationDelivery,
    Environment,
    StorageVolume,
}

impl ChangeKind {
    pub const ALL: [Self; 10] = [
        Self::Resource,
        Self::Deployment,
        Self::Server,
        Self::DomainBinding,
        Self::ScheduledTask,
        Self::ScheduledTaskRun,
        Self::NotificationChannel,
        Self::NotificationDelivery,
        Self::Environment,
        Self::StorageVolume,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resource => "resource",
            Self::Deployment => "deployment",
            Self::Server => "server",
            Self::DomainBinding => "domain-binding",
            Self::ScheduledTask => "scheduled-task",
            Self::ScheduledTaskRun => "scheduled-task-run",
            Self::NotificationChannel => "notification-channel",
            Self::NotificationDelivery => "notification-delivery",
            Self::Environment => "environment",
            Self::StorageVolume => "storage-volume",
        }
    }
}

#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeType {
    Created,
    Updated,
    Deleted,
}

/// One event of `GET /events/stream` (SSE `event` named as `kind`): a change, or a `resync`
/// when the position asked for is no longer kept (or is of an earlier shim process): the
/// client re-reads what it shows, then goes on from the resync's id.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FeedEnvelope {
    #[serde(rename_all = "camelCase")]
    Change {
        schema_version: String,
        change: ChangeEvent,
    },
    #[serde(rename_all = "camelCase")]
    Resync {
        schema_version: String,
        /// Resume after this id; changes before it were not sent.
        event_id: String,
        reason: String,
    },
}

/// One change of one object.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChangeEvent {
    /// The event's id (also the SSE `id`): pass as `after` or `Last-Event-ID` to resume.
    pub event_id: String,
    /// Increases by one per change the shim saw (of any organization).
    pub sequence: u64,
    pub kind: ChangeKind,
    /// The object's id.
    pub object_id: String,
    pub change_type: ChangeType,
    /// When the shim saw the change (RFC 3339).
    pub occurred_at: String,
    /// The object's status after the change, as its own record spells it (a deployment's
    /// `running`, a server's lifecycle, a domain binding's route status); absent when it has
    /// none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The resource the object is or belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_id: Option<String>,
    /// One line for people: "deployment dep-web-3 running (Building)".
    pub summary: String,
}

/// Where an audit event comes from.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum AuditSource {
    /// A write through the REST API (the CLI, the console, scripts).
    Rest,
    /// A write made around the REST API, straight to the Kubernetes API (kubectl, a GitOps
    /// tool); its actor is the field manager the API server names.
    KubernetesApi,
    /// A Kubernetes Event about the object (berth-controller's reconciles).
    KubernetesEvent,
}

/// Who made a change.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditActor {
    /// `user`, `deploy-token`, `field-manager` (a write straight to the Kubernetes API) or
    /// `controller`.
    pub kind: String,
    /// A user or deploy token id, a field manager (`kubectl-edit`), or the controller that
    /// reported the event.
    pub id: String,
}

/// One field a write changed; `value` only for flags (true/false), never a value that
/// could be secret.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditFieldChange {
    /// The field's path in the object, `spec.autoDeploy.enabled`.
    pub field: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<bool>,
}

/// One item of `audit-events.list/v1`.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    pub audit_event_id: String,
    /// The object the event is about.
    pub aggregate_id: String,
    /// `resource`, `deployment`, `server`, `project`, … (lower-case kind).
    pub aggregate_kind: String,
    /// A write: the object's kind and the change, `resource.updated` (`.created`, `.deleted`);
    /// a Kubernetes Event: its reason, `ProxyRemoved`.
    pub event_type: String,
    /// RFC 3339.
    pub created_at: String,
    pub source: AuditSource,
    pub actor: AuditActor,
    /// REST: the operation as its route, `POST /resources/{resourceId}/auto-deploy`; a write
    /// around it: its operation, `Apply through the Kubernetes API`; a Kubernetes Event: its
    /// action.
    pub action: String,
    /// The resource the object is or belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// What a write changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<AuditFieldChange>,
    /// One line for people.
    pub summary: String,
}

/// `GET /audit-events`: newest first.
#[derive(Serialize, Deserialize, JsonSchema, Debug, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AuditEventList {
    pub schema_version: String,
    pub items: Vec<AuditEvent>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    pub generated_at: String,
}
