#!/usr/bin/env bash
# Sets up a fresh machine and runs Switchboard on its embedded defaults: the desktop app
# (src-tauri, a window on the control panel, a tray icon) when a display is present, the
# headless `switchboard serve` otherwise — it says which and why. Extra arguments go to
# `switchboard serve` (e.g. --mcp-json ~/.cursor/mcp.json) and so choose the headless server;
# SWITCHBOARD_HEADLESS=1 chooses it too.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { printf '\033[1mrun-app:\033[0m %s\n' "$*" >&2; }
bash "$ROOT/scripts/setup.sh" app
command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"
cd "$ROOT"
# Both binaries embed the control panel from ui/dist: build it once when it is missing.
if [ ! -f "$ROOT/ui/dist/index.html" ]; then
  bash "$ROOT/scripts/setup.sh" ui
  (cd ui && PATH="$ROOT/.cache/node/node_modules/.bin:$PATH" npm run --silent build)
fi
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

headless() {
  local why=$1
  shift
  say "$why: running the headless server (switchboard serve; the panel's URL follows)"
  cargo build --release -p switchboard-app
  exec "$TARGET/release/switchboard" serve "$@"
}

display=${WAYLAND_DISPLAY:+wayland display $WAYLAND_DISPLAY}
display=${display:-${DISPLAY:+X display $DISPLAY}}
if [ -n "${SWITCHBOARD_HEADLESS:-}" ]; then
  headless "SWITCHBOARD_HEADLESS is set" "$@"
elif (($#)); then
  headless "arguments for switchboard serve were given" "$@"
elif [ -z "$display" ]; then
  headless "no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"
fi

# The desktop app: the WebKitGTK build packages, then the shell in the dev profile (the same
# build the tests use; scripts/build-deb.sh --release makes an optimised package to install).
bash "$ROOT/scripts/setup.sh" desktop
cargo build -p switchboard-desktop --locked
say "a display is present ($display): launching the desktop app (a window on the panel; tray icon with Open/Quit)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
"$TARGET/debug/switchboard-desktop" 2> >(tee "$log" >&2)
rc=$?
set -e
wait 2>/dev/null || true
if ((rc != 0)) && grep -q 'Failed to initialize gtk backend' "$log"; then
  trap - EXIT; rm -f "$log"
  headless "the display ($display) could not be opened by GTK"
fi
exit "$rc"
