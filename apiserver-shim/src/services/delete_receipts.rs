//! Idempotency keys of recent deletes (`DELETE /servers`; resource deletes keep a store of
//! their own), so a retried delete answers like the first one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a `DELETE /servers` idempotency key is remembered.
const RECEIPT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Most idempotency keys remembered at once.
const MAX_RECEIPTS: usize = 10_000;

/// Idempotency keys of recent deletes, kept in the shim's memory (a restart forgets them; a
/// retry then sees 404 for a server that is gone).
#[derive(Default)]
pub struct DeleteReceipts {
    entries: Mutex<HashMap<(String, String), (String, Instant)>>,
}

impl DeleteReceipts {
    /// What `key` deleted in `namespace`, while it is remembered.
    pub(crate) fn get(&self, namespace: &str, key: &str) -> Option<String> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&(namespace.to_string(), key.to_string()))
            .filter(|(_, at)| at.elapsed() < RECEIPT_TTL)
            .map(|(id, _)| id.clone())
    }

    /// Remembers that `key` deleted `id` in `namespace`, forgetting the oldest key when full.
    pub(crate) fn record(&self, namespace: &str, key: &str, id: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, (_, at)| at.elapsed() < RECEIPT_TTL);
        if entries.len() >= MAX_RECEIPTS
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(
            (namespace.to_string(), key.to_string()),
            (id.to_string(), Instant::now()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_remember_the_server_of_a_key() {
        let receipts = DeleteReceipts::default();
        assert_eq!(receipts.get("ns", "k"), None);
        receipts.record("ns", "k", "srv-1");
        assert_eq!(receipts.get("ns", "k").as_deref(), Some("srv-1"));
        assert_eq!(receipts.get("other", "k"), None);
    }
}
