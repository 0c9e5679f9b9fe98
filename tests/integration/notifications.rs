//! Notifications on the real stack, channels written with the Kubernetes API: a receiver on
//! loopback gets a signed webhook for a failed deploy, a failed task run and a crash Docker
//! restarted, each once; the stack's SMTP server receives the failed deploy by mail over
//! STARTTLS with a login; a channel whose receiver answers 500 is tried five times, recorded
//! failed and says so on the channel. No message or record holds a channel's secret.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_crds::notification::{DeliveryStatus, NotificationChannel, NotificationDelivery};
use berth_crds::scheduled_task::{ScheduledTaskRun, ScheduledTaskRunSpec, TriggerKind};
use berth_tests::{TestNamespace, client, eventually, random_suffix, stack_env};
use hmac::{Hmac, Mac};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::dependency_resources::docker;
use crate::deployments::{apply, ready_server, resource_yaml, wait_ended};
use crate::deployments_build::Scratch;

const WAIT: Duration = Duration::from_secs(180);
/// How soon after its cause a message must arrive.
const WITHIN: Duration = Duration::from_secs(60);

/// An app that exits with code 3 when /tmp/crash-now appears; Docker starts it again.
const CRASHING_DOCKERFILE: &str = r#"FROM berth/sample-app:1
CMD ["/bin/sh", "-c", "/bin/sample-app & while [ ! -f /tmp/crash-now ]; do sleep 1; done; rm /tmp/crash-now; exit 3"]
"#;

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    path: String,
    signature: Option<String>,
    body: Vec<u8>,
    at: Instant,
}

/// A webhook receiver on loopback: `/hook` answers 200, anything else 500.
pub struct Receiver {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let store = received.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let store = store.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    let status = if request.path == "/hook" {
                        "200 OK"
                    } else {
                        "500 Internal Server Error"
                    };
                    store.lock().unwrap().push(request);
                    let answer = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        Self { port, received }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The JSON bodies received on `/hook` for `event`.
    pub fn hooks(&self, event: &str) -> Vec<(Received, Value)> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == "/hook")
            .filter_map(|r| Some((r.clone(), serde_json::from_slice::<Value>(&r.body).ok()?)))
            .filter(|(_, body)| body["event"] == event)
            .collect()
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    };
    let length: usize = header("content-length")?.parse().ok()?;
    while buffer.len() < head_end + length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    Some(Received {
        path: head.split_whitespace().nth(1)?.to_string(),
        signature: header("x-berth-signature-256"),
        body: buffer[head_end..head_end + length].to_vec(),
        at: Instant::now(),
    })
}

fn signed(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

async fn secret(ns: &TestNamespace, name: &str, data: Value) {
    let secret: Secret =
        serde_json::from_value(json!({ "metadata": { "name": name }, "stringData": data }))
            .unwrap();
    ns.api::<Secret>()
        .create(&PostParams::default(), &secret)
        .await
        .expect("create a channel Secret");
}

fn channel(ns: &TestNamespace, name: &str, spec: Value) -> String {
    json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "NotificationChannel",
        "metadata": { "name": name, "namespace": ns.name }, "spec": spec,
    })
    .to_string()
}

/// A webhook channel `name` in `ns` that sends `events` to `receiver`'s `/hook`.
pub async fn webhook_channel(ns: &TestNamespace, name: &str, receiver: &Receiver, events: &[&str]) {
    let secret_name = format!("{name}-hook");
    secret(ns, &secret_name, json!({ "url": receiver.url("/hook") })).await;
    let spec = json!({
        "name": name, "kind": "webhook", "secretRef": secret_name, "events": events,
    });
    apply(&channel(ns, name, spec));
}

/// Waits until `/hook` got one `event` message; returns it and when it came.
pub async fn hook(receiver: &Receiver, event: &str) -> (Received, Value) {
    eventually(WAIT, &format!("a {event} webhook"), || async {
        receiver.hooks(event).into_iter().next()
    })
    .await
}

#[tokio::test]
async fn failures_reach_a_signed_webhook_and_mail_once_each_and_a_failing_channel_is_recorded() {
    let client = client().await;
    let ns = TestNamespace::new(&client, "notify").await;
    ready_server(&ns).await;
    let receiver = Receiver::start().await;
    let signing = format!("sign-{}{}", random_suffix(), random_suffix());
    secret(
        &ns,
        "ops-hook",
        json!({ "url": receiver.url("/hook"), "signingSecret": signing }),
    )
    .await;
    secret(
        &ns,
        "broken-hook",
        json!({ "url": receiver.url("/broken") }),
    )
    .await;
    let smtp_password = stack_env("BERTH_SMTP_PASSWORD");
    let ca = std::fs::read_to_string(stack_env("BERTH_SMTP_CA")).expect("the SMTP server's CA");
    secret(
        &ns,
        "ops-mail",
        json!({ "smtpPassword": smtp_password, "smtpCa": ca }),
    )
    .await;
    apply(&channel(
        &ns,
        "ops",
        json!({ "name": "Ops", "kind": "webhook", "secretRef": "ops-hook" }),
    ));
    apply(&channel(
        &ns,
        "broken",
        json!({
            "name": "Broken", "kind": "webhook", "secretRef": "broken-hook",
            "events": ["deployment-failed"],
        }),
    ));
    let recipient = format!("ops-{}@example.test", ns.name);
    apply(&channel(
        &ns,
        "mail",
        json!({
            "name": "Mail", "kind": "email", "secretRef": "ops-mail", "events": ["deployment-failed"],
            "email": {
                "to": [recipient], "from": "berth@example.test",
                "smtpHost": stack_env("BERTH_SMTP_HOST"),
                "smtpPort": stack_env("BERTH_SMTP_PORT").parse::<i64>().unwrap(),
                "smtpUsername": stack_env("BERTH_SMTP_USERNAME"),
            },
        }),
    ));

    // A deploy whose health check never passes.
    apply(&resource_yaml(
        &ns,
        "bad",
        "berth/sample-app:1",
        "/no-such-page",
    ));
    let failed = wait_ended(&ns, "dep-bad-1").await;
    let ended = Instant::now();
    let state = failed.status.as_ref().and_then(|s| s.status);
    assert_eq!(state, Some(berth_crds::deployment::DeploymentState::Failed));
    let (message, body) = hook(&receiver, "deployment-failed").await;
    assert!(
        message.at.duration_since(ended) <= WITHIN,
        "late: {:?}",
        message.at - ended
    );
    assert_eq!(body["subject"]["name"], "dep-bad-1", "{body}");
    assert!(!body["summary"].as_str().unwrap().is_empty(), "{body}");
    assert_eq!(
        message.signature,
        Some(signed(&signing, &message.body)),
        "signed with the secret"
    );

    // The same failure by mail, over STARTTLS with the login.
    let maildir = std::path::PathBuf::from(stack_env("BERTH_SMTP_MAILDIR")).join("new");
    let mail = eventually(WAIT, "the mail", || async {
        std::fs::read_dir(&maildir)
            .ok()?
            .flatten()
            .find_map(|entry| {
                let text = std::fs::read_to_string(entry.path()).ok()?;
                text.contains(&recipient).then(|| (entry.path(), text))
            })
    })
    .await;
    let (mail_path, mail) = mail;
    assert!(
        mail.contains("Subject: [Berth] deployment failed: Deployment dep-bad-1"),
        "{mail}"
    );
    assert!(mail.contains("X-Berth-Smtp-Tls: yes"), "{mail}");
    assert!(
        mail.contains(&format!(
            "X-Berth-Smtp-Auth: {}",
            stack_env("BERTH_SMTP_USERNAME")
        )),
        "{mail}"
    );
    assert!(
        !mail.contains(&smtp_password),
        "the SMTP password in the mail"
    );
    let _ = std::fs::remove_file(mail_path);

    // An app that crashes and is restarted by Docker, and a task run of it that fails.
    let folder = Scratch::new();
    folder.write("Dockerfile", CRASHING_DOCKERFILE);
    let crashy = json!({
        "apiVersion": "berth.dev/v1alpha1", "kind": "Resource",
        "metadata": { "name": "crashy", "namespace": ns.name },
        "spec": {
            "projectId": "prj-demo", "environmentId": "env-prod", "serverId": "local",
            "name": "crashy", "kind": "application",
            "source": { "kind": "local-folder", "locator": folder.path().to_str().unwrap() },
            "networkProfile": { "internalPort": 8080 },
            "autoDeploy": { "enabled": true },
        },
    });
    apply(&crashy.to_string());
    let deployed = wait_ended(&ns, "dep-crashy-1").await;
    assert_eq!(
        deployed.status.as_ref().and_then(|s| s.status),
        Some(berth_crds::deployment::DeploymentState::Succeeded)
    );
    let container = docker(&[
        "ps",
        "-q",
        "--filter",
        &format!("label=berth.dev/namespace={}", ns.name),
        "--filter",
        "label=berth.dev/deployment=dep-crashy-1",
    ])
    .1;
    let crashed = Instant::now();
    docker(&["exec", &container, "touch", "/tmp/crash-now"]);
    let (message, body) = hook(&receiver, "crash-loop").await;
    assert!(
        message.at.duration_since(crashed) <= WITHIN,
        "late: {:?}",
        message.at - crashed
    );
    assert!(
        body["summary"].as_str().unwrap().contains("code 3"),
        "{body}"
    );

    apply(
        &json!({
            "apiVersion": "berth.dev/v1alpha1", "kind": "ScheduledTask",
            "metadata": { "name": "report", "namespace": ns.name },
            "spec": { "resourceId": "crashy", "schedule": "@yearly", "command": "exit 4",
                      "state": "disabled" },
        })
        .to_string(),
    );
    let mut run = ScheduledTaskRun::new(
        "report-by-hand",
        ScheduledTaskRunSpec {
            task_id: "report".into(),
            resource_id: "crashy".into(),
            trigger_kind: TriggerKind::Manual,
            scheduled_for: None,
            command: "exit 4".into(),
            timeout_seconds: 60,
            retry_limit: 0,
            not_run: None,
        },
    );
    run.metadata.labels =
        Some([("berth.dev/scheduled-task".to_string(), "report".to_string())].into());
    let requested = Instant::now();
    ns.api::<ScheduledTaskRun>()
        .create(&PostParams::default(), &run)
        .await
        .unwrap();
    let (message, body) = hook(&receiver, "scheduled-task-failed").await;
    assert!(
        message.at.duration_since(requested) <= WITHIN,
        "late: {:?}",
        message.at - requested
    );
    assert_eq!(body["subject"]["name"], "report-by-hand", "{body}");
    assert!(
        body["summary"]
            .as_str()
            .unwrap()
            .contains("exited with code 4"),
        "{body}"
    );

    // The channel answering 500: five attempts, then failed, said on the delivery and channel.
    let deliveries = ns.api::<NotificationDelivery>();
    let broken = eventually(WAIT, "the broken channel's delivery failed", || async {
        deliveries
            .list(&Default::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|d| {
                d.spec.channel_id == "broken" && d.delivery_status() == DeliveryStatus::Failed
            })
    })
    .await;
    let status = broken.status.clone().unwrap();
    assert_eq!(status.attempts, 5, "{status:?}");
    assert!(
        status.last_error.clone().unwrap().contains("500"),
        "{status:?}"
    );
    let tried = receiver
        .received
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.path == "/broken")
        .count();
    assert_eq!(tried, 5, "every attempt reached the receiver");
    let channel = ns.api::<NotificationChannel>().get("broken").await.unwrap();
    let ready = channel
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.reason, "DeliveryFailed", "{ready:?}");

    // Each event reached the webhook once; no record holds a channel's secret or URL path.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for event in ["deployment-failed", "crash-loop", "scheduled-task-failed"] {
        assert_eq!(receiver.hooks(event).len(), 1, "{event} delivered once");
    }
    for delivery in deliveries.list(&Default::default()).await.unwrap() {
        let text = serde_json::to_string(&delivery).unwrap();
        assert!(
            !text.contains(&signing) && !text.contains("/hook") && !text.contains(&smtp_password),
            "{text}"
        );
    }
}
