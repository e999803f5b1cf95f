//! Upstream connectors: how the router talks to the MCP servers behind it.
//!
//! Three transports sit behind one [`Upstream`] interface — a supervised stdio child
//! process ([`stdio`]), a Streamable HTTP client ([`http`]) and a WebSocket client
//! ([`ws`]) — so the registry and the data plane never care which one a server uses.
//! On top of any upstream, [`client::McpClient`] performs the era negotiation (modern
//! `server/discover` first, then `initialize`), keeps the handshake, injects per-request
//! `_meta` for 2026-07-28 servers, re-initialises expired 2025-11-25 sessions and pages
//! through lists. Every frame crossing an upstream is offered to a [`frame::Tap`], which
//! costs one atomic load when nobody is watching.

pub mod client;
mod duplex;
pub mod error;
pub mod exchange;
pub mod frame;
pub mod http;
mod lines;
pub mod pipe;
pub mod sse;
pub mod stdio;
pub mod upstream;
pub mod ws;

pub use client::{ConnectOptions, Handshake, HandshakeFailure, McpClient};
pub use error::Error;
pub use exchange::Exchange;
pub use frame::{Boundary, Direction, FrameBus, FrameEvent, FrameSink, Tap, correlated, current_correlation};
pub use upstream::{TransportKind, Upstream, UpstreamEvent, UpstreamStatus};
