//! Switchboard's federated MCP endpoint, as a service the app mounts.
//!
//! Everything a downstream MCP client meets lives here: request handling for both protocol
//! revisions on one URL ([`endpoint`]), 2025-11-25 sessions ([`session`]), bridging between
//! revisions ([`bridge`]), change notifications ([`notify`]), the edge that adds deadlines,
//! traces and the bearer token around `/mcp` ([`edge`], [`auth`], [`traces`]), and WebSocket
//! and stdio clients ([`downstream`]). The app meets all of it through one front door,
//! [`Gateway`] ([`service`]).
//!
//! The boundary exists so the app crate is composition and CLI only: the gateway takes a
//! [`switchboard_router::Registry`] and typed settings, and never reads files, flags or the
//! environment itself (the one exception, the session key's environment override, is named
//! in [`session`]).

pub mod auth;
pub mod bridge;
pub mod downstream;
pub mod edge;
pub mod endpoint;
pub mod notify;
pub mod service;
pub mod session;
pub mod traces;

pub use service::{Gateway, GatewayConfig};
