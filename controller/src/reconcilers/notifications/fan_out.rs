//! The notifier: each [`Notice`] becomes one NotificationDelivery per channel of its
//! namespace that follows the event (and the subject's project). Channels are read from a
//! watch; the delivery's name makes a report of the same event within the window a duplicate
//! the API server refuses. Old ended deliveries of a channel are pruned as new ones come.

use std::sync::Arc;

use berth_crds::notification::{
    CHANNEL_LABEL, NotificationChannel, NotificationDelivery, NotificationDeliverySpec,
    delivery_name,
};
use futures::StreamExt;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::reflector::{self, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource as _, ResourceExt};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::context::Context;
use crate::notices::Notice;

/// Ended deliveries kept per channel, the newest.
const DELIVERIES_KEPT: usize = 200;

/// Turns notices into deliveries until `shutdown`.
pub async fn run(context: Arc<Context>, shutdown: impl Future<Output = ()> + Send + 'static) {
    let Some(mut notices) = context.notices.take_receiver() else {
        return;
    };
    let (channels, writer) = reflector::store();
    let watch = reflector(
        writer,
        watcher(
            Api::<NotificationChannel>::all(context.client.clone()),
            watcher::Config::default(),
        ),
    )
    .applied_objects()
    .for_each(|_| async {});
    let deliver = async {
        if channels.wait_until_ready().await.is_err() {
            return;
        }
        while let Some(notice) = next(&mut notices).await {
            fan_out(&context, &channels, notice).await;
        }
    };
    tokio::select! {
        _ = watch => {}
        _ = deliver => {}
        _ = shutdown => {}
    }
}

async fn next(notices: &mut UnboundedReceiver<Notice>) -> Option<Notice> {
    notices.recv().await
}

/// The channels of the notice's namespace that follow it.
fn followers(
    channels: &Store<NotificationChannel>,
    notice: &Notice,
) -> Vec<Arc<NotificationChannel>> {
    channels
        .state()
        .into_iter()
        .filter(|channel| channel.namespace().as_deref() == Some(notice.namespace.as_str()))
        .filter(|channel| channel.metadata.deletion_timestamp.is_none())
        .filter(|channel| channel.spec.follows(notice.event))
        .filter(|channel| match &channel.spec.project_id {
            Some(project) => notice.project_id.as_ref() == Some(project),
            None => true,
        })
        .collect()
}

async fn fan_out(context: &Context, channels: &Store<NotificationChannel>, notice: Notice) {
    let deliveries =
        Api::<NotificationDelivery>::namespaced(context.client.clone(), &notice.namespace);
    for channel in followers(channels, &notice) {
        let delivery = delivery_for(context, &channel, &notice);
        match deliveries.create(&PostParams::default(), &delivery).await {
            Ok(_) => prune(&deliveries, &channel.name_any()).await,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(channel = %channel.name_any(), event = notice.event.as_str(),
                    "already notified within the window");
            }
            Err(error) => {
                tracing::warn!(%error, channel = %channel.name_any(), "could not record a notification")
            }
        }
    }
}

fn delivery_for(
    context: &Context,
    channel: &NotificationChannel,
    notice: &Notice,
) -> NotificationDelivery {
    let name = delivery_name(
        &channel.name_any(),
        notice.event,
        &notice.subject,
        notice.occurred_at.as_second(),
    );
    NotificationDelivery {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(notice.namespace.clone()),
            labels: Some([(CHANNEL_LABEL.to_string(), channel.name_any())].into()),
            owner_references: channel.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..Default::default()
        },
        spec: NotificationDeliverySpec {
            channel_id: channel.name_any(),
            event: notice.event,
            subject: notice.subject.clone(),
            project_id: notice.project_id.clone(),
            summary: notice.summary.clone(),
            occurred_at: notice.occurred_at.to_string(),
            link: link(context.notices.console_url.as_deref(), notice),
        },
        status: None,
    }
}

/// Where the console shows the subject, when its address is known.
fn link(console: Option<&str>, notice: &Notice) -> Option<String> {
    let console = console?;
    Some(match (&notice.resource_id, notice.subject.kind.as_str()) {
        (Some(resource), _) => format!("{console}/resources/{resource}"),
        (None, "Server") => format!("{console}/servers/{}", notice.subject.name),
        (None, _) => console.to_string(),
    })
}

/// Deletes the channel's oldest ended deliveries beyond [`DELIVERIES_KEPT`].
async fn prune(deliveries: &Api<NotificationDelivery>, channel: &str) {
    let params = ListParams::default().labels(&format!("{CHANNEL_LABEL}={channel}"));
    let Ok(list) = deliveries.list(&params).await else {
        return;
    };
    let mut ended: Vec<NotificationDelivery> = list
        .items
        .into_iter()
        .filter(|d| d.delivery_status() != berth_crds::notification::DeliveryStatus::Pending)
        .collect();
    if ended.len() <= DELIVERIES_KEPT {
        return;
    }
    ended.sort_by_key(|d| d.metadata.creation_timestamp.clone().map(|t| t.0));
    let excess = ended.len() - DELIVERIES_KEPT;
    for old in &ended[..excess] {
        let _ = deliveries
            .delete(&old.name_any(), &DeleteParams::default())
            .await;
    }
}
