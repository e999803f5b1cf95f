//! Switchboard's composition root.
//!
//! Reads configuration (file, flags, environment — the only crate that does), opens the
//! store, builds the registry and runs the `switchboard` commands. Library crates get
//! typed configuration from here and never look at the environment themselves.

pub use switchboard_gateway::{auth, bridge, downstream, edge, endpoint, notify, session, traces};

pub mod blobs;
pub mod builtins;
pub mod config;
pub mod diagnose;
pub mod http;
pub mod invoker;
pub mod listener;
pub mod probe;
pub mod serve;
pub mod servers;
pub mod stdout;
pub mod upstreams;

/// Unix time in milliseconds (the one clock helper, shared with the router).
pub use switchboard_router::events::now_ms;
