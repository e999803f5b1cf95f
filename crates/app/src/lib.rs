//! Switchboard's composition root.
//!
//! Reads configuration (file, flags, environment — the only crate that does), opens the
//! store, builds the registry and runs the `switchboard` commands. Library crates get
//! typed configuration from here and never look at the environment themselves.

pub mod auth;
pub mod blobs;
pub mod bridge;
pub mod builtins;
pub mod config;
pub mod diagnose;
pub mod downstream;
pub mod edge;
pub mod endpoint;
pub mod http;
pub mod invoker;
pub mod listener;
pub mod notify;
pub mod probe;
pub mod serve;
pub mod servers;
pub mod session;
pub mod stdout;
pub mod traces;
pub mod upstreams;

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
