//! Notifications: reconcilers hand a [`crate::notices::Notice`] to `context.notices` when
//! something a person should hear of happens (a failed deploy, a failed or missed task run, a
//! crash, an unhealthy resource, an unreachable server); the notifier (`fan_out`) makes a NotificationDelivery per
//! channel that follows it, and the delivery controller (`delivery`) sends it, retried and
//! recorded. Nothing that reports waits on a channel.

mod delivery;
mod fan_out;
mod message;
mod send;

pub use self::delivery::run as run_deliveries;
pub use self::fan_out::run as run_notifier;
