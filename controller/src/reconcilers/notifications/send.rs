//! Sending one message: an HTTP POST (webhook, Slack) or a mail over SMTP. Errors say what
//! failed without the target's URL (a Slack URL is itself a credential) or any password.

use std::time::Duration;

use berth_crds::notification::EmailSettings;
use lettre::message::header::ContentType;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

/// How long one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// POSTs `body` (JSON) to `url` with `headers`; any answer but 2xx is a failure.
pub async fn post(url: &str, body: Vec<u8>, headers: &[(&str, String)]) -> Result<(), String> {
    let client = reqwest::Client::builder()
        .timeout(ATTEMPT_TIMEOUT)
        .build()
        .map_err(|error| error.without_url().to_string())?;
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("User-Agent", "berth-notifier");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request
        .body(body)
        .send()
        .await
        .map_err(|error| format!("the request failed: {}", error.without_url()))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the receiver answered {status}"))
    }
}

/// What an email needs besides its settings: the password and an extra root to trust.
pub struct Mail<'a> {
    pub settings: &'a EmailSettings,
    pub password: Option<String>,
    /// A PEM CA trusted beside the built-in roots (a private mail server's).
    pub extra_ca: Option<Vec<u8>>,
    pub subject: String,
    pub body: String,
}

/// Sends `mail` over SMTP, upgraded with STARTTLS unless the channel turned it off.
pub async fn send_mail(mail: Mail<'_>) -> Result<(), String> {
    let settings = mail.settings;
    let mut message = Message::builder()
        .from(parse_address(&settings.from, "email.from")?)
        .subject(mail.subject)
        .header(ContentType::TEXT_PLAIN);
    for to in &settings.to {
        message = message.to(parse_address(to, "email.to")?);
    }
    let message = message
        .body(mail.body)
        .map_err(|error| format!("the message could not be built: {error}"))?;
    let port = u16::try_from(settings.smtp_port).map_err(|_| "email.smtpPort is not a port")?;
    let mut transport =
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&settings.smtp_host)
            .port(port)
            .timeout(Some(ATTEMPT_TIMEOUT));
    if settings.start_tls {
        transport = transport.tls(Tls::Required(tls(&settings.smtp_host, mail.extra_ca)?));
    }
    if let (Some(user), Some(password)) = (&settings.smtp_username, mail.password) {
        transport = transport.credentials(Credentials::new(user.clone(), password));
    }
    transport
        .build()
        .send(message)
        .await
        .map(drop)
        .map_err(|error| format!("the mail server refused or failed: {error}"))
}

fn tls(host: &str, extra_ca: Option<Vec<u8>>) -> Result<TlsParameters, String> {
    let mut builder = TlsParameters::builder(host.to_string());
    if let Some(pem) = extra_ca {
        let root = Certificate::from_pem(&pem)
            .map_err(|error| format!("smtpCa is not a PEM certificate: {error}"))?;
        builder = builder.add_root_certificate(root);
    }
    builder
        .build_rustls()
        .map_err(|error| format!("TLS could not be set up: {error}"))
}

fn parse_address(text: &str, field: &str) -> Result<lettre::message::Mailbox, String> {
    text.parse()
        .map_err(|_| format!("{field}: {text:?} is not an email address"))
}
