//! The MCP wire model, shared by every other Switchboard crate.
//!
//! This crate knows what JSON-RPC 2.0 and the two MCP revisions the router speaks
//! (2025-11-25, stateful, and 2026-07-28, stateless) look like on the wire, and nothing
//! else: it performs no I/O. The boundary exists so that the data plane can forward
//! messages as raw JSON — [`Message`] keeps every field it does not understand, in its
//! original order — while routing, transports and the UI share one vocabulary of
//! method names, `_meta` keys, header rules, error codes and eras.

pub mod era;
pub mod error_code;
pub mod headers;
pub mod message;
pub mod meta;
pub mod method;

pub use era::{Era, LEGACY_VERSIONS, MODERN_VERSIONS, negotiate_legacy_version};
pub use message::{ErrorObject, Id, Kind, Message, ParseError};
