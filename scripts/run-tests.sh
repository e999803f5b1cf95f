#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite: formatting, lints, and every
# test of every crate (unit, integration against real MCP peers, conformance scenarios).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh" test
command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"
cd "$ROOT"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "cargo test"
# One build of every target first, so test binaries that start the mcp-fixture binary find it.
cargo build --workspace --all-targets --locked
cargo test --workspace --locked
