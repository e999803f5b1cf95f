//! Switchboard's built-in MCP servers.
//!
//! The diagnosis flow (vision → knowledge → reasoning) calls these servers through the router like any other MCP
//! server; they live in one crate so that they can run in-process by default and standalone on demand. The crate
//! holds only domain logic and its MCP wrapping: no configuration loading, no process set-up.
//!
//! - [`vision`]: thermal-image analysis behind `analyze_thermal_image` (temperatures, hotspots, NETA severity,
//!   suspected component, failure-mode hypothesis).
//! - [`knowledge`]: the maintenance-manual knowledge base behind the `search_manual` tool (SQLite FTS5 with BM25
//!   ranking plus trigram matching of part numbers).
//! - [`reasoning`]: repair planning behind `generate_repair_steps` (deterministic synthesis, optional LLM).
//!
//! - [`eval`]: the labelled diagnosis evaluation (knowledge recall@3/precision@3, plan precision).
//!
//! All servers are plain rmcp [`rmcp::ServerHandler`]s; [`serve`] runs any of them over stdio, Streamable HTTP,
//! WebSocket or an in-memory pipe.

pub mod error;
pub mod eval;
pub mod knowledge;
pub mod reasoning;
pub mod serve;
pub mod vision;

pub use error::{Error, Result};
