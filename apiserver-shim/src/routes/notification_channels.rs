//! Notification channels over REST (Berth's; Appaloft has none): `POST /notification-channels`
//! (admins), `GET /notification-channels[/{channelId}]`, `DELETE
//! /notification-channels/{channelId}` (admins) and `POST /notification-channels/{channelId}/test`
//! (admins; 202). A channel is a NotificationChannel object in the organization's namespace;
//! its URL, signing secret and SMTP password live in the Secret `<channel>-notification` it
//! owns. A test is a NotificationDelivery owned by the channel, which berth-controller sends
//! as it sends every pending delivery. Reads come from the watch caches (the Secret, read by
//! name, only for the masked target).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use berth_crds::notification::{ChannelKind, NotificationChannel, NotificationDelivery};
use berth_crds::{UPDATED_BY_ID, UPDATED_BY_KIND};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};

use super::Endpoint;
use crate::auth::Caller;
use crate::cache::{catch_up, wait_deleted};
use crate::domain::notifications::{
    CHANNEL_PREFIX, channel_secret, channel_summary, lookup_channel, new_channel_spec,
    new_signing_secret, reader, secret_url, sees_channel, test_delivery, test_delivery_name,
    writer,
};
use crate::domain::objects::all_in;
use crate::domain::projects;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams, known_params};
use crate::json::Json;
use crate::state::AppState;
use crate::token::new_id;
use crate::write::apply;

pub use berth_api::notifications::{
    CHANNEL_COMMAND_SCHEMA, CHANNEL_DELETE_SCHEMA, CHANNEL_LIST_SCHEMA, CHANNEL_SHOW_SCHEMA,
    CHANNEL_TEST_SCHEMA, CreateNotificationChannel, DeleteNotificationChannel,
    DeleteNotificationChannelResponse, NotificationChannelCommandResponse, NotificationChannelList,
    NotificationChannelShow, TestNotificationChannel, TestNotificationChannelResponse,
};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post::<CreateNotificationChannel, NotificationChannelCommandResponse, _, _>(
            "/notification-channels",
            "Create a notification channel (admins; 201): a signed webhook, a Slack-compatible \
             webhook or email, for the whole organization or one project. A webhook's signing \
             secret is in this answer only",
            create,
        )
        .success(&[StatusCode::CREATED]),
        Endpoint::get::<NotificationChannelList, _, _>(
            "/notification-channels",
            "List notification channels, their targets masked (projectId filter)",
            list,
        ),
        Endpoint::get::<NotificationChannelShow, _, _>(
            "/notification-channels/{channelId}",
            "Show a notification channel: events, masked target, last delivery, readiness",
            show,
        ),
        Endpoint::delete::<DeleteNotificationChannel, DeleteNotificationChannelResponse, _, _>(
            "/notification-channels/{channelId}",
            "Delete a notification channel (admins), its Secret and its deliveries",
            delete,
        ),
        Endpoint::post::<TestNotificationChannel, TestNotificationChannelResponse, _, _>(
            "/notification-channels/{channelId}/test",
            "Send a test message to a notification channel (admins; 202): a pending delivery \
             berth-controller sends; follow it in GET /notification-deliveries",
            test,
        )
        .success(&[StatusCode::ACCEPTED]),
    ]
}

fn channels_api(state: &AppState, namespace: &str) -> Api<NotificationChannel> {
    Api::namespaced(state.client.clone(), namespace)
}

fn secrets_api(state: &AppState, namespace: &str) -> Api<Secret> {
    Api::namespaced(state.client.clone(), namespace)
}

fn deliveries_of(state: &AppState, namespace: &str) -> Vec<Arc<NotificationDelivery>> {
    all_in(&state.caches.notification_deliveries, namespace)
}

/// The URL a webhook or Slack channel's Secret holds (for its masked target); `None` for
/// email channels, and when the Secret or its `url` is missing or unreadable.
async fn url_of(state: &AppState, channel: &NotificationChannel) -> Option<String> {
    if channel.spec.kind == ChannelKind::Email {
        return None;
    }
    let namespace = channel.namespace().unwrap_or_default();
    match secrets_api(state, &namespace)
        .get_opt(&channel.spec.secret_ref)
        .await
    {
        Ok(secret) => secret_url(secret.as_ref()),
        Err(error) => {
            tracing::warn!(channel = %channel.name_any(), %error, "channel Secret not read");
            None
        }
    }
}

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateNotificationChannel>,
) -> ApiResult<(StatusCode, Json<NotificationChannelCommandResponse>)> {
    let organization = writer(&caller)?.clone();
    body.validate()?;
    if let Some(project) = &body.project_id {
        projects::lookup(&state, &caller, project).map_err(|_| {
            ApiError::validation(
                "projectId",
                format!("projectId {project} is not a project of this organization"),
            )
        })?;
    }
    let namespace = organization.namespace;
    let id = new_id(CHANNEL_PREFIX);
    let spec = new_channel_spec(&id, &body);
    let api = channels_api(&state, &namespace);
    let channel = NotificationChannel::new(&id, spec);
    let written = apply(
        &api,
        &state.caches.notification_channels,
        Some(&caller),
        channel,
    )
    .await?;
    let signing_secret = (body.kind == ChannelKind::Webhook).then(new_signing_secret);
    let secret = channel_secret(&written, &body, signing_secret.as_deref());
    if let Err(error) = secrets_api(&state, &namespace)
        .create(&PostParams::default(), &secret)
        .await
    {
        // Without its Secret the channel cannot deliver; take it back.
        let _ = api.delete(&id, &DeleteParams::background()).await;
        return Err(error.into());
    }
    tracing::info!(channel = %id, kind = ?body.kind, "notification channel created");
    let deliveries = deliveries_of(&state, &namespace);
    let channel = channel_summary(&written, body.url.as_deref(), &deliveries);
    Ok((
        StatusCode::CREATED,
        Json(NotificationChannelCommandResponse {
            schema_version: CHANNEL_COMMAND_SCHEMA.into(),
            channel,
            signing_secret,
        }),
    ))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryParams,
) -> ApiResult<Json<NotificationChannelList>> {
    known_params(&query, &["projectId"])?;
    let organization = reader(&caller)?;
    let namespace = &organization.namespace;
    let project = query.string("projectId")?;
    if let Some(project) = project {
        projects::lookup(&state, &caller, project)
            .map_err(|e| e.with_detail("field", "projectId"))?;
    }
    let mut channels: Vec<Arc<NotificationChannel>> =
        all_in(&state.caches.notification_channels, namespace)
            .into_iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter(|c| sees_channel(&caller, c.spec.project_id.as_deref()))
            .filter(|c| project.is_none_or(|p| c.spec.project_id.as_deref() == Some(p)))
            .collect();
    channels.sort_by_key(|c| {
        (
            c.metadata.creation_timestamp.clone().map(|t| t.0),
            c.name_any(),
        )
    });
    let urls = futures::future::join_all(channels.iter().map(|c| url_of(&state, c))).await;
    let deliveries = deliveries_of(&state, namespace);
    Ok(Json(NotificationChannelList {
        schema_version: CHANNEL_LIST_SCHEMA.into(),
        items: channels
            .iter()
            .zip(urls)
            .map(|(channel, url)| channel_summary(channel, url.as_deref(), &deliveries))
            .collect(),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<NotificationChannelShow>> {
    let channel = lookup_channel(&state, &caller, &id)?;
    let url = url_of(&state, &channel).await;
    let deliveries = deliveries_of(&state, &channel.namespace().unwrap_or_default());
    Ok(Json(NotificationChannelShow {
        schema_version: CHANNEL_SHOW_SCHEMA.into(),
        channel: channel_summary(&channel, url.as_deref(), &deliveries),
        generated_at: Timestamp::now().to_string(),
    }))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_body): JsonBody<DeleteNotificationChannel>,
) -> ApiResult<Json<DeleteNotificationChannelResponse>> {
    let channel = lookup_channel(&state, &caller, &id)?;
    writer(&caller)?;
    let namespace = channel.namespace().unwrap_or_default();
    let api = channels_api(&state, &namespace);
    // Background propagation: the API answers at once and the garbage collector removes the
    // Secret and the deliveries the channel owns.
    let background = DeleteParams::background();
    let marked = crate::write::delete(&api, channel.as_ref(), &background, &caller).await?;
    wait_deleted(
        &state.caches.notification_channels,
        channel.as_ref(),
        marked,
    )
    .await?;
    tracing::info!(channel = %id, "notification channel deleted");
    Ok(Json(DeleteNotificationChannelResponse {
        schema_version: CHANNEL_DELETE_SCHEMA.into(),
        channel_id: id,
        status: "deleted".into(),
        deleted_at: Timestamp::now().to_string(),
    }))
}

async fn test(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(_body): JsonBody<TestNotificationChannel>,
) -> ApiResult<(StatusCode, Json<TestNotificationChannelResponse>)> {
    let channel = lookup_channel(&state, &caller, &id)?;
    writer(&caller)?;
    let namespace = channel.namespace().unwrap_or_default();
    let api = Api::<NotificationDelivery>::namespaced(state.client.clone(), &namespace);
    let name = test_delivery_name(&id);
    let mut delivery = test_delivery(&channel, &name, Timestamp::now());
    let (kind, actor) = caller.actor();
    delivery.annotations_mut().extend([
        (UPDATED_BY_KIND.to_string(), kind.to_string()),
        (UPDATED_BY_ID.to_string(), actor.to_string()),
    ]);
    let created = api.create(&PostParams::default(), &delivery).await?;
    catch_up(&state.caches.notification_deliveries, &created).await?;
    tracing::info!(channel = %id, delivery = %name, "notification test asked for");
    Ok((
        StatusCode::ACCEPTED,
        Json(TestNotificationChannelResponse {
            schema_version: CHANNEL_TEST_SCHEMA.into(),
            delivery: crate::domain::notifications::delivery_summary(&created),
        }),
    ))
}
