//! End-to-end tests of the `switchboard` command: `probe` against real servers and the
//! official conformance suite's client scenarios, `serve` + `servers` over one store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli;
mod conformance;
mod diagnose;
mod downstream;
mod edge;
mod endpoint;
mod serve_flags;

pub use switchboard_fixtures::peers::{everything_js, node, node_dir, repo_root};

/// The binary under test.
pub fn switchboard() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}
