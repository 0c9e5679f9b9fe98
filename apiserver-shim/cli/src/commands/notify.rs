//! Notification channels (`/notification-channels`) and deliveries
//! (`/notification-deliveries`): list, show, create, test, delete a channel; list deliveries.

use super::line_from_stdin;

use berth_api::notifications::{
    ChannelKind, CreateNotificationChannel, DeleteNotificationChannel, DeliveryStatus,
    EmailChannelInput, NotificationChannelCommandResponse, NotificationChannelList,
    NotificationChannelShow, NotificationChannelSummary, NotificationDeliveryList,
    NotificationDeliverySummary, NotificationEvent, TestNotificationChannel,
    TestNotificationChannelResponse,
};

use super::workspace::project_id;
use super::{Ctx, get_as, read_as, wire_enum};
use crate::cli::Notify;
use crate::error::{CliError, CliResult};
use crate::output::{Row, optional, text, wire};

fn events_cell(events: &[NotificationEvent]) -> String {
    let names: Vec<&str> = events.iter().map(|e| e.as_str()).collect();
    text(&names.join(","))
}

fn ready_cell(channel: &NotificationChannelSummary) -> String {
    match (&channel.message, channel.ready) {
        (_, true) => "yes".to_string(),
        (Some(message), false) => format!("no: {message}"),
        (None, false) => "-".to_string(),
    }
}

fn last_delivery_cell(channel: &NotificationChannelSummary) -> String {
    channel.last_delivery.as_ref().map_or_else(
        || "-".to_string(),
        |last| format!("{} ({})", last.delivery_id, wire(&last.status)),
    )
}

impl Row for NotificationChannelSummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "KIND",
        "PROJECT",
        "TARGET",
        "EVENTS",
        "LAST DELIVERY",
        "READY",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            text(&self.id),
            text(&self.name),
            wire(&self.kind),
            optional(self.project_id.as_ref()),
            optional(self.target.as_ref()),
            events_cell(&self.events),
            last_delivery_cell(self),
            ready_cell(self),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

/// A channel as `berth notify show-channel` prints it.
struct ChannelDetail(NotificationChannelSummary);

impl Row for ChannelDetail {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "KIND",
        "PROJECT",
        "TARGET",
        "EVENTS",
        "LAST DELIVERY",
        "READY",
        "CREATED",
    ];

    fn cells(&self) -> Vec<String> {
        let mut cells = self.0.cells();
        cells.push(text(&self.0.created_at));
        cells
    }

    fn id(&self) -> &str {
        &self.0.id
    }
}

impl Row for NotificationDeliverySummary {
    const HEADERS: &'static [&'static str] = &[
        "ID",
        "CHANNEL",
        "EVENT",
        "SUBJECT",
        "STATUS",
        "ATTEMPTS",
        "OCCURRED",
        "SUMMARY",
        "LAST ERROR",
    ];

    fn cells(&self) -> Vec<String> {
        let subject = self.subject.display_name.as_ref().map_or_else(
            || format!("{} {}", self.subject.kind, self.subject.name),
            |name| format!("{} {} ({name})", self.subject.kind, self.subject.name),
        );
        vec![
            text(&self.id),
            text(&self.channel_id),
            wire(&self.event),
            subject,
            wire(&self.status),
            self.attempts.to_string(),
            text(&self.occurred_at),
            text(&self.summary),
            optional(self.last_error.as_ref()),
        ]
    }

    fn id(&self) -> &str {
        &self.id
    }
}

pub fn notify(ctx: &Ctx, command: Notify) -> CliResult<()> {
    match command {
        Notify::Channels { project } => {
            let mut query = Vec::new();
            if let Some(project) = project {
                query.push(("projectId", project_id(ctx, &project)?));
            }
            let (answer, list): (_, NotificationChannelList) =
                get_as(ctx.api()?, "/notification-channels", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Notify::ShowChannel { channel } => {
            let path = format!("/notification-channels/{channel}");
            let (answer, shown): (_, NotificationChannelShow) = get_as(ctx.api()?, &path, &[])?;
            ctx.out.row(&answer, &ChannelDetail(shown.channel));
            Ok(())
        }
        Notify::CreateChannel {
            name,
            kind,
            webhook_url,
            events,
            project,
            to,
            from,
            smtp_host,
            smtp_port,
            smtp_username,
            smtp_password_stdin,
            smtp_ca_file,
            no_start_tls,
        } => {
            let kind: ChannelKind = wire_enum("kind", &kind)?;
            let events = events
                .iter()
                .map(|e| wire_enum::<NotificationEvent>("event", e))
                .collect::<CliResult<Vec<_>>>()?;
            let mailing = !to.is_empty()
                || from.is_some()
                || smtp_host.is_some()
                || smtp_port.is_some()
                || smtp_username.is_some()
                || smtp_password_stdin
                || smtp_ca_file.is_some()
                || no_start_tls;
            let email = if mailing {
                let smtp_password = if smtp_password_stdin {
                    Some(line_from_stdin("--smtp-password-stdin", "password")?)
                } else {
                    None
                };
                let smtp_ca = smtp_ca_file
                    .map(|path| {
                        std::fs::read_to_string(&path).map_err(|error| {
                            CliError::Usage(format!("--smtp-ca-file {}: {error}", path.display()))
                        })
                    })
                    .transpose()?;
                Some(EmailChannelInput {
                    to,
                    from: from.unwrap_or_default(),
                    smtp_host: smtp_host.unwrap_or_default(),
                    smtp_port,
                    smtp_username,
                    smtp_password,
                    start_tls: no_start_tls.then_some(false),
                    smtp_ca,
                })
            } else {
                None
            };
            let mut body = CreateNotificationChannel {
                name,
                kind,
                project_id: project.clone(),
                events: (!events.is_empty()).then_some(events),
                url: webhook_url,
                email,
            };
            // Checked before the project is looked up and before anything is sent.
            body.validate()?;
            if let Some(project) = project {
                body.project_id = Some(project_id(ctx, &project)?);
            }
            let answer = ctx.api()?.post("/notification-channels", &body)?;
            let created: NotificationChannelCommandResponse =
                read_as("notification channel", &answer)?;
            let channel = &created.channel;
            if ctx.out.human() {
                println!(
                    "Created {} channel {} ({}) to {}",
                    wire(&channel.kind),
                    channel.id,
                    channel.name,
                    optional(channel.target.as_ref())
                );
                if let Some(secret) = &created.signing_secret {
                    println!(
                        "Signing secret (shown only now; receivers check X-Berth-Signature-256 with it):\n{secret}"
                    );
                }
                println!("Try it: berth notify test {}", channel.id);
            } else if ctx.out.quiet {
                println!("{}", channel.id);
            } else {
                ctx.out.raw(&answer);
            }
            Ok(())
        }
        Notify::Test { channel } => {
            let path = format!("/notification-channels/{channel}/test");
            let answer = ctx
                .api()?
                .post(&path, &TestNotificationChannel::default())?;
            let sent: TestNotificationChannelResponse = read_as("notification test", &answer)?;
            let delivery = &sent.delivery.id;
            if ctx.out.human() {
                println!(
                    "Test message {delivery} queued for {channel} (berth notify deliveries --channel {channel})"
                );
            } else if ctx.out.quiet {
                println!("{delivery}");
            } else {
                ctx.out.raw(&answer);
            }
            Ok(())
        }
        Notify::Deliveries {
            channel,
            status,
            event,
        } => {
            let mut query = Vec::new();
            if let Some(channel) = channel {
                query.push(("channelId", channel));
            }
            if let Some(status) = status {
                query.push((
                    "status",
                    wire(&wire_enum::<DeliveryStatus>("status", &status)?),
                ));
            }
            if let Some(event) = event {
                query.push((
                    "event",
                    wire(&wire_enum::<NotificationEvent>("event", &event)?),
                ));
            }
            let (answer, list): (_, NotificationDeliveryList) =
                get_as(ctx.api()?, "/notification-deliveries", &query)?;
            ctx.out.rows(&answer, &list.items);
            Ok(())
        }
        Notify::DeleteChannel { channel } => {
            let path = format!("/notification-channels/{channel}");
            let answer = ctx
                .api()?
                .delete(&path, &DeleteNotificationChannel::default())?;
            ctx.out.done(
                &answer,
                &format!("Deleted notification channel {channel}, its Secret and its deliveries"),
            );
            Ok(())
        }
    }
}
