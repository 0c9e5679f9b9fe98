//! What reconcilers hand the notifier: a [`Notice`] per event worth telling a person, sent
//! without waiting (a channel that is slow or down never holds up what it reports on).

use std::sync::Mutex;

use berth_crds::notification::{NotificationEvent, Subject};
use k8s_openapi::jiff::Timestamp;
use tokio::sync::mpsc;

/// One event about one object of an organization's namespace.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub namespace: String,
    pub event: NotificationEvent,
    pub subject: Subject,
    /// The subject's project, when it has one (a channel may follow one project only).
    pub project_id: Option<String>,
    /// The resource the subject belongs to (or is), for the console link.
    pub resource_id: Option<String>,
    /// The cause in one line, already free of secrets.
    pub summary: String,
    pub occurred_at: Timestamp,
}

/// The sending side, shared through the context, and the receiving side the notifier takes.
pub struct Notices {
    sender: mpsc::UnboundedSender<Notice>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Notice>>>,
    /// The console's address, for links in messages (`--console-url`).
    pub console_url: Option<String>,
}

impl Notices {
    pub fn new(console_url: Option<String>) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            sender,
            receiver: Mutex::new(Some(receiver)),
            console_url: console_url.map(|url| url.trim_end_matches('/').to_string()),
        }
    }

    /// Hands `notice` to the notifier; dropped when none runs (tests, shutdown).
    pub fn send(&self, notice: Notice) {
        let _ = self.sender.send(notice);
    }

    /// The receiving side, once: the notifier of this process.
    pub fn take_receiver(&self) -> Option<mpsc::UnboundedReceiver<Notice>> {
        self.receiver.lock().ok()?.take()
    }
}

impl Default for Notices {
    fn default() -> Self {
        Self::new(None)
    }
}

/// A subject of `kind` named `name`.
pub fn subject(kind: &str, name: &str, display_name: Option<&str>) -> Subject {
    Subject {
        kind: kind.to_string(),
        name: name.to_string(),
        display_name: display_name.map(str::to_string),
    }
}
