//! Switchboard's composition root.
//!
//! Reads configuration (file, flags, environment — the only crate that does) and builds the
//! router from it: [`app::App`] opens the store, builds the registry with the built-in
//! servers, the blob store, traces and the gateway, serves them and shuts them down in order.
//! Every binary (`switchboard`, `endpoint-bench`, the desktop shell) and the integration tests
//! start Switchboard through `App`. Library crates get typed configuration from here and never
//! look at the environment themselves.
//!
//! The thermal diagnosis is a service of the app ([`diagnosis::Diagnosis`]), shared by the
//! `diagnose` command and the panel's routes ([`diagnosis::routes`]).
//!
//! The `switchboard` command's own code (argument parsing, terminal output, one module per
//! command) lives in the binary (`src/cli.rs`, `src/cli/`), not here: what links this library
//! gets composition only.

pub use switchboard_gateway::{auth, bridge, downstream, edge, endpoint, notify, session, traces};

pub mod app;
pub mod blobs;
pub mod builtins;
pub mod config;
pub mod diagnosis;
pub mod http;
pub mod invoker;
pub mod listener;
pub mod panel;
pub mod probe;
pub mod reload;
pub mod upstreams;

pub use app::{App, AppError, AppOptions};

/// Unix time in milliseconds (the one clock helper, shared with the router).
pub use switchboard_router::events::now_ms;
