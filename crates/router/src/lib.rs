//! The router's registry of upstream MCP servers.
//!
//! This crate turns configuration (a TOML file, `mcp.json` files as desktop MCP clients
//! write them) into live, handshaken connections: each server gets a stable
//! [`config::ServerSpec::server_id`], a supervised connection, a handshake record for
//! every attempt, a catalog of tools/resources/prompts whose schemas are compiled (a
//! broken tool is quarantined, the rest stay usable), periodic and `list_changed`
//! refreshes, and a state (`pending → ready → degraded → unavailable`) with a reason for
//! every change. Everything observable is published on the [`events::EventBus`] and, where
//! useful, persisted through `switchboard-store`.
//!
//! Which upstream a call goes to is decided in one place, [`route::RouteTable::route`]: the
//! gateway's endpoint, its traces and the flow invoker all ask it, and the scheduler will
//! live behind it. The rest of the data plane (the federated endpoint) lives in the gateway
//! crate: this crate only knows about upstreams and where a name leads.

pub mod catalog;
pub mod config;
pub mod decision;
pub mod dedicated;
pub mod error;
pub mod events;
pub mod federation;
pub mod labels;
pub mod load;
pub mod registry;
pub mod route;
pub mod schedule;
pub mod schema;
pub mod state;
pub mod stats;
mod unsolicited;

pub use config::{RegistryConfig, ServerSpec, TransportSpec};
pub use error::Error;
pub use events::{CatalogDiff, Event, EventBus, EventKind, Filter, Subscription};
pub use registry::{Registry, ServerState, ServerView};
pub use route::{Route, RouteCache, RouteError, RouteTable, Target};
pub use schedule::SchedulerConfig;
