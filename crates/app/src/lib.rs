//! Switchboard's composition root.
//!
//! Reads configuration (file, flags, environment — the only crate that does), opens the
//! store, builds the registry and runs the `switchboard` commands. Library crates get
//! typed configuration from here and never look at the environment themselves.

pub mod blobs;
pub mod builtins;
pub mod config;
pub mod http;
pub mod probe;
pub mod serve;
pub mod servers;
