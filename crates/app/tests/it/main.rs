//! End-to-end tests of the `switchboard` command: `probe` against real servers and the
//! official conformance suite's client scenarios, `serve` + `servers` over one store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli;
mod conformance;
mod diagnose;
mod endpoint;

use std::path::PathBuf;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Where scripts/setup.sh installed the Node peers.
pub fn node_dir() -> PathBuf {
    let dir = std::env::var_os("SWITCHBOARD_NODE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".cache/node"));
    assert!(
        dir.join("node_modules/@modelcontextprotocol/server-everything").exists(),
        "Node test peers are missing in {}: run `scripts/setup.sh test` first",
        dir.display()
    );
    dir
}

/// Node 22 from the npm registry.
pub fn node() -> String {
    node_dir().join("node_modules/.bin/node").to_string_lossy().into_owned()
}

/// server-everything's entry point.
pub fn everything_js() -> String {
    node_dir()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js")
        .to_string_lossy()
        .into_owned()
}

/// The binary under test.
pub fn switchboard() -> &'static str {
    env!("CARGO_BIN_EXE_switchboard")
}
