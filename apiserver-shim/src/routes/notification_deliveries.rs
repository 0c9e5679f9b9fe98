//! Notification deliveries over REST: `GET /notification-deliveries[/{deliveryId}]`, newest
//! first — each message berth-controller sent, is sending or gave up on, as the
//! NotificationDelivery objects of the organization's namespace say.

use std::sync::Arc;

use axum::extract::{Path, State};
use berth_crds::notification::{DeliveryStatus, NotificationDelivery, NotificationEvent};
use k8s_openapi::jiff::Timestamp;

use super::Endpoint;
use crate::auth::Caller;
use crate::domain::notifications::{
    delivery_summary, lookup_channel, lookup_delivery, reader, sees_delivery, sort_newest_first,
};
use crate::domain::objects::all_in;
use crate::error::ApiResult;
use crate::extract::{QueryParams, known_params, paginate};
use crate::json::Json;
use crate::state::AppState;

pub use berth_api::notifications::{
    DELIVERY_LIST_SCHEMA, DELIVERY_SHOW_SCHEMA, NotificationDeliveryList, NotificationDeliveryShow,
    PAGE_LIMIT_MAX,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get::<NotificationDeliveryList, _, _>(
            "/notification-deliveries",
            "List notification deliveries, newest first (channelId, status, event filters; \
             limit, cursor)",
            list,
        ),
        Endpoint::get::<NotificationDeliveryShow, _, _>(
            "/notification-deliveries/{deliveryId}",
            "Show a notification delivery: event, subject, status, attempts, last error",
            show,
        ),
    ]
}

const STATUSES: [&str; 3] = ["pending", "delivered", "failed"];

fn status_named(name: &str) -> DeliveryStatus {
    match name {
        "delivered" => DeliveryStatus::Delivered,
        "failed" => DeliveryStatus::Failed,
        _ => DeliveryStatus::Pending,
    }
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<NotificationDeliveryList>> {
    known_params(&query, &["channelId", "status", "event", "limit", "cursor"])?;
    let organization = reader(&caller)?;
    let namespace = &organization.namespace;
    let limit = query.integer("limit", 1, PAGE_LIMIT_MAX, PAGE_LIMIT_MAX)? as usize;
    let cursor = query.string("cursor")?;
    let channel = query.string("channelId")?;
    if let Some(channel) = channel {
        lookup_channel(&state, &caller, channel)
            .map_err(|e| e.with_detail("field", "channelId"))?;
    }
    let status = query.one_of("status", &STATUSES, None)?.map(status_named);
    let events: Vec<&str> = NotificationEvent::ALL.iter().map(|e| e.as_str()).collect();
    let event = query.one_of("event", &events, None)?.and_then(|name| {
        NotificationEvent::ALL
            .into_iter()
            .find(|e| e.as_str() == name)
    });
    let mut deliveries: Vec<Arc<NotificationDelivery>> =
        all_in(&state.caches.notification_deliveries, namespace)
            .into_iter()
            .filter(|d| channel.is_none_or(|c| d.spec.channel_id == c))
            .filter(|d| status.is_none_or(|s| d.delivery_status() == s))
            .filter(|d| event.is_none_or(|e| d.spec.event == e))
            .filter(|d| sees_delivery(&state, &caller, namespace, d))
            .collect();
    sort_newest_first(&mut deliveries);
    let (page, next_cursor) = paginate(&deliveries, cursor, limit)?;
    Ok(Json(NotificationDeliveryList {
        schema_version: DELIVERY_LIST_SCHEMA.into(),
        items: page.iter().map(|d| delivery_summary(d)).collect(),
        next_cursor,
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<NotificationDeliveryShow>> {
    let delivery = lookup_delivery(&state, &caller, &id)?;
    Ok(Json(NotificationDeliveryShow {
        schema_version: DELIVERY_SHOW_SCHEMA.into(),
        delivery: delivery_summary(&delivery),
        generated_at: Timestamp::now().to_string(),
    }))
}
