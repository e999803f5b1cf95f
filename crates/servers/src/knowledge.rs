//! The knowledge base behind the `search_manual` MCP tool.
//!
//! Maintenance knowledge arrives as Markdown files (one component family per file, one `## Section` per failure
//! mode; see [`corpus`]) or as JSON arrays of the same sections. [`index`] stores them in SQLite with two FTS5
//! tables: a BM25 text index and a trigram index over normalised part numbers, and ranks hits as
//! *exact part number → fuzzy part number → text relevance*, with an optional component-kind preference; a
//! *structured* query (component group and failure mode as fields, see [`taxonomy`]) filters and ranks on
//! section metadata instead.
//! [`embedded`] ships the corpus in the binary. [`text`] holds the pure string helpers (normalisation,
//! FTS5-safe query building, similarity) so they can be unit-tested without a database. [`server`] wraps the
//! knowledge base as an MCP server with the `search_manual` tool.

pub mod corpus;
pub mod embedded;
pub mod index;
pub mod server;
pub mod taxonomy;
pub mod text;

pub use corpus::Section;
pub use index::{Hit, ImportReport, KnowledgeBase, MatchReason, SearchQuery};
pub use server::KnowledgeServer;
