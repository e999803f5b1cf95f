//! Integration tests of switchboard-servers: one binary, one module per server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod eval;
mod knowledge;
mod knowledge_mcp;
mod reasoning;
mod serve;
mod vision;
