//! Switchboard's federated MCP endpoint, as a service the app mounts.
//!
//! Everything a downstream MCP client meets lives here, in layers that only look down:
//!
//! - **Transports** parse each client frame once and say where it came from: Streamable
//!   HTTP ([`http`]: `POST`/`GET`/`DELETE /mcp`, JSON and SSE), WebSocket and stdio
//!   ([`downstream`]). They publish the downstream leg's frames on the event bus ([`frames`]).
//! - **The edge** ([`edge`]) wraps every request the same way whatever its transport: the
//!   deadline of forwarded calls, the answer size limit, and traces ([`traces`]).
//! - **The endpoint** ([`endpoint`]) answers a parsed message with a [`endpoint::Reply`]
//!   (one message, a stream of messages, or nothing), for both protocol revisions on one URL:
//!   2025-11-25 sessions ([`session`]), bridging between revisions ([`bridge`]), change
//!   notifications ([`notify`]), federated lists and forwarded calls over the routing seam.
//! - **Who is connected** ([`sessions`]): a bounded table of downstream sessions and callers
//!   with their upstream bindings, for the panel; nothing is refused because of it.
//! - **Leaves** everyone may use: settings ([`config`]), the cached federation ([`view`]),
//!   origin checks ([`origin`]), the bearer token ([`auth`]).
//!
//! The app meets all of it through one front door, [`Gateway`] ([`service`]).
//!
//! The boundary exists so the app crate is composition and CLI only: the gateway takes a
//! [`switchboard_router::Registry`] and typed settings, and never reads files, flags or the
//! environment itself (the one exception, the session key's environment override, is named
//! in [`session`]).

pub mod auth;
pub mod bridge;
pub mod config;
pub mod downstream;
pub mod edge;
pub mod endpoint;
pub mod frames;
pub mod http;
pub mod notify;
pub mod origin;
pub mod registration;
pub mod service;
pub mod session;
pub mod sessions;
pub mod traces;
pub mod view;

pub use service::{Gateway, GatewayConfig};
