//! Switchboard's built-in MCP servers.
//!
//! The diagnosis flow (vision → knowledge → reasoning) calls these servers through the router like any other MCP
//! server; they live in one crate so that they can run in-process by default and standalone on demand. The crate
//! holds only domain logic and its MCP wrapping: no configuration loading, no process set-up.
//!
//! - [`knowledge`]: the maintenance-manual knowledge base behind the `search_manual` tool (SQLite FTS5 with BM25
//!   ranking plus trigram matching of part numbers).

pub mod error;
pub mod knowledge;

pub use error::{Error, Result};
