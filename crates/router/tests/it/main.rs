//! Integration tests of the registry against real MCP servers: the official
//! `server-everything` (Node, legacy) over stdio and Streamable HTTP, and the rmcp-based
//! `mcp-fixture` (both eras) over HTTP, WebSocket and stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod concurrency;
mod events;
mod health;
mod lifecycle;
mod peers;
mod questions;
mod refresh;
