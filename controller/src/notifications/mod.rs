//! Notifications: reconcilers hand a [`Notice`] to `context.notices` when something a person
//! should hear of happens (a failed deploy, a failed or missed task run, a crash, an unhealthy
//! resource, an unreachable server); the notifier (`fan_out`) makes a NotificationDelivery per
//! channel that follows it, and the delivery controller (`delivery`) sends it, retried and
//! recorded. Nothing that reports waits on a channel.

mod delivery;
mod fan_out;
mod message;
pub mod notices;
mod send;

pub use self::delivery::run as run_deliveries;
pub use self::fan_out::run as run_notifier;
pub use self::notices::{Notice, Notices, subject};

use berth_crds::notification::{NotificationEvent, Subject};
use k8s_openapi::jiff::Timestamp;

use crate::cache::Caches;
use crate::context::Context;

/// Hands the notifier `event` about `subject`, an object of resource `resource_id` (or the
/// resource itself) in `namespace`; the project is read from the cache.
pub fn notify_about_resource(
    context: &Context,
    namespace: &str,
    resource_id: &str,
    event: NotificationEvent,
    subject: Subject,
    summary: String,
) {
    let resource = Caches::get(&context.caches.resources, namespace, resource_id);
    context.notices.send(Notice {
        namespace: namespace.to_string(),
        event,
        subject,
        project_id: resource.map(|r| r.spec.project_id.clone()),
        resource_id: Some(resource_id.to_string()),
        summary,
        occurred_at: Timestamp::now(),
    });
}
