#!/usr/bin/env bash
# Sets up a fresh machine and runs Switchboard on its embedded defaults
# (extra arguments go to `switchboard serve`, e.g. --mcp-json ~/.cursor/mcp.json).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh" app
command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"
cd "$ROOT"
# The binary embeds the control panel from ui/dist: build it once when it is missing.
if [ ! -f "$ROOT/ui/dist/index.html" ]; then
  bash "$ROOT/scripts/setup.sh" ui
  (cd ui && PATH="$ROOT/.cache/node/node_modules/.bin:$PATH" npm run --silent build)
fi
cargo build --release -p switchboard-app
exec "$ROOT/target/release/switchboard" serve "$@"
