//! What `berth-controller` and `berth-shim` do the same way, so each is written once: the flag
//! groups both take (flattened into each binary's options, as `#[command(flatten)]`), the
//! logging set-up and the shutdown signal.
#![forbid(unsafe_code)]

pub mod flags;
pub mod logging;
pub mod shutdown;
