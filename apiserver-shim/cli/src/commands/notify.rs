//! Notification channels (`/notification-channels`) and deliveries
//! (`/notification-deliveries`): list, show, create, test, delete a channel; list deliveries.

use super::line_from_stdin;

use berth_api::notifications::{
    ChannelKind, CreateNotificationChannel, DeleteNotificationChannel,
    DeleteNotificationChannelResponse, DeliveryStatus, EmailChannelInput,
    NotificationChannelCommandResponse, NotificationChannelList, NotificationChannelShow,
    NotificationChannelSummary, NotificationDeliveryList, NotificationDeliverySummary,
    NotificationEvent, TestNotificationChannel, TestNotificationChannelResponse,
};

use super::workspace::project_id;
use super::{Answer, Ctx, wire_enum};
use crate::cli::{CreateChannelArgs, Notify};
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
        Notify::Channels { project } => channels(ctx, project),
        Notify::ShowChannel { channel } => show_channel(ctx, &channel),
        Notify::CreateChannel(args) => create_channel(ctx, args),
        Notify::Test { channel } => test(ctx, &channel),
        Notify::Deliveries {
            channel,
            status,
            event,
        } => deliveries(ctx, channel, status, event),
        Notify::DeleteChannel { channel } => delete_channel(ctx, &channel),
    }
}

fn channels(ctx: &Ctx, project: Option<String>) -> CliResult<()> {
    let mut query = Vec::new();
    if let Some(project) = project {
        query.push(("projectId", project_id(ctx, &project)?));
    }
    let answer = ctx
        .api()?
        .get::<NotificationChannelList>("/notification-channels", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn show_channel(ctx: &Ctx, channel: &str) -> CliResult<()> {
    let path = format!("/notification-channels/{channel}");
    let answer = ctx.api()?.get::<NotificationChannelShow>(&path, &[])?;
    ctx.out
        .row(&answer.raw, &ChannelDetail(answer.value.channel));
    Ok(())
}

fn create_channel(ctx: &Ctx, args: CreateChannelArgs) -> CliResult<()> {
    let kind: ChannelKind = wire_enum("kind", &args.kind)?;
    let events = args
        .events
        .iter()
        .map(|e| wire_enum::<NotificationEvent>("event", e))
        .collect::<CliResult<Vec<_>>>()?;
    let email = email_input(&args)?;
    let mut body = CreateNotificationChannel {
        name: args.name,
        kind,
        project_id: args.project.clone(),
        events: (!events.is_empty()).then_some(events),
        url: args.webhook_url,
        email,
    };
    // Checked before the project is looked up and before anything is sent.
    body.validate()?;
    if let Some(project) = args.project {
        body.project_id = Some(project_id(ctx, &project)?);
    }
    let answer = ctx
        .api()?
        .post::<NotificationChannelCommandResponse>("/notification-channels", &body)?;
    print_created_channel(ctx, &answer);
    Ok(())
}

/// The e-mail settings of a channel, when any e-mail option is given.
fn email_input(args: &CreateChannelArgs) -> CliResult<Option<EmailChannelInput>> {
    let mailing = !args.to.is_empty()
        || args.from.is_some()
        || args.smtp_host.is_some()
        || args.smtp_port.is_some()
        || args.smtp_username.is_some()
        || args.smtp_password_stdin
        || args.smtp_ca_file.is_some()
        || args.no_start_tls;
    if !mailing {
        return Ok(None);
    }
    let smtp_password = if args.smtp_password_stdin {
        Some(line_from_stdin("--smtp-password-stdin", "password")?)
    } else {
        None
    };
    let smtp_ca = args
        .smtp_ca_file
        .as_ref()
        .map(|path| {
            std::fs::read_to_string(path).map_err(|error| {
                CliError::Usage(format!("--smtp-ca-file {}: {error}", path.display()))
            })
        })
        .transpose()?;
    Ok(Some(EmailChannelInput {
        to: args.to.clone(),
        from: args.from.clone().unwrap_or_default(),
        smtp_host: args.smtp_host.clone().unwrap_or_default(),
        smtp_port: args.smtp_port,
        smtp_username: args.smtp_username.clone(),
        smtp_password,
        start_tls: args.no_start_tls.then_some(false),
        smtp_ca,
    }))
}

fn print_created_channel(ctx: &Ctx, answer: &Answer<NotificationChannelCommandResponse>) {
    let created = &answer.value;
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
        ctx.out.raw(&answer.raw);
    }
}

fn test(ctx: &Ctx, channel: &str) -> CliResult<()> {
    let path = format!("/notification-channels/{channel}/test");
    let answer = ctx
        .api()?
        .post::<TestNotificationChannelResponse>(&path, &TestNotificationChannel::default())?;
    let delivery = &answer.value.delivery.id;
    if ctx.out.human() {
        println!(
            "Test message {delivery} queued for {channel} (berth notify deliveries --channel {channel})"
        );
    } else if ctx.out.quiet {
        println!("{delivery}");
    } else {
        ctx.out.raw(&answer.raw);
    }
    Ok(())
}

fn deliveries(
    ctx: &Ctx,
    channel: Option<String>,
    status: Option<String>,
    event: Option<String>,
) -> CliResult<()> {
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
    let answer = ctx
        .api()?
        .get::<NotificationDeliveryList>("/notification-deliveries", &query)?;
    ctx.out.rows(&answer.raw, &answer.value.items);
    Ok(())
}

fn delete_channel(ctx: &Ctx, channel: &str) -> CliResult<()> {
    let path = format!("/notification-channels/{channel}");
    let answer = ctx.api()?.delete::<DeleteNotificationChannelResponse>(
        &path,
        &DeleteNotificationChannel::default(),
    )?;
    ctx.out.done(
        &answer.raw,
        &format!("Deleted notification channel {channel}, its Secret and its deliveries"),
    );
    Ok(())
}
