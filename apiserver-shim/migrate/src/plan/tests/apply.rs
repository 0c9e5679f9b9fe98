//! Receipts, placeholders and cleanup.
