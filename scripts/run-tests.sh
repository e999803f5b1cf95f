#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite: formatting, lints, every test of
# every crate (unit, integration against real MCP peers, conformance scenarios), then the
# endpoint acceptance script (tests/endpoint-acceptance.sh). The control panel (ui/) is
# type-checked, unit-tested (Vitest) and built before `cargo build`, so the binary embeds
# ui/dist, and driven end to end in Debian's Chromium (Playwright) after it.
#
# The desktop shell (src-tauri, not a default member) has steps of its own after the
# workspace's: clippy, build and unit tests of `-p switchboard-desktop` (always the same
# package selection, so its build of tokio & co is reused run after run), then
# tests/desktop/run.sh under Xvfb (the window and its screenshot, single instance, a
# tauri-driver + WebKitWebDriver Diagnosis run, no orphans) and the .deb (scripts/build-deb.sh,
# apt-get install, the installed app starts). SWITCHBOARD_DESKTOP: gate (default) or off.
#
# SWITCHBOARD_E2E chooses what the panel's Playwright step does: gate (default) or off.
# SWITCHBOARD_STRESS=report keeps the frame stress test from gating (its figures are printed).
#
# SWITCHBOARD_ACCEPTANCE chooses what the acceptance step does:
#   gate (default) — runs it; any failure fails this script
#   report         — runs it and prints its table; failures do not fail this script
#   off            — skips it
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh" test
command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"
cd "$ROOT"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
UI_PATH="$ROOT/.cache/node/node_modules/.bin:$PATH"
step "ui: typecheck"
(cd ui && PATH="$UI_PATH" npm run --silent typecheck)
step "ui: unit tests (vitest)"
(cd ui && PATH="$UI_PATH" npm run --silent test)
step "ui: build (vite) -> ui/dist, embedded by the binary"
(cd ui && PATH="$UI_PATH" npm run --silent build)
step "layout: no module circles, no source file over 600 lines"
python3 "$ROOT/scripts/module-cycles.py" >/dev/null || python3 "$ROOT/scripts/module-cycles.py"
long=$(find "$ROOT/crates" "$ROOT/src-tauri/src" "$ROOT/src-tauri/build.rs" -name '*.rs' -exec awk 'END { if (NR > 600) print FILENAME ": " NR " lines" }' {} \;)
if [ -n "$long" ]; then echo "source files over 600 lines (split them by concern):"; echo "$long"; exit 1; fi
step "cargo fmt --check"
cargo fmt --all -- --check
# The default members (crates/*): never the desktop shell, so no WebKitGTK bindings here.
step "cargo clippy"
cargo clippy --all-targets --locked -- -D warnings
step "cargo test"
# One build of every target first, so test binaries that start the mcp-fixture binary find it.
cargo build --all-targets --locked
cargo test --locked --no-fail-fast
DESKTOP=${SWITCHBOARD_DESKTOP:-gate}
case "$DESKTOP" in gate | off) ;; *) echo "SWITCHBOARD_DESKTOP must be gate or off" >&2; exit 2 ;; esac
step "ui: end to end (playwright, Debian's chromium; SWITCHBOARD_E2E=${SWITCHBOARD_E2E:-gate})"
case "${SWITCHBOARD_E2E:-gate}" in
  off) echo "skipped" ;;
  gate)
    (cd ui && PATH="$UI_PATH" PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
      SWITCHBOARD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/switchboard" npm run --silent e2e -- e2e/panel.spec.ts)
    # The frame stress test: >= 5 000 frames/s through the router for 10 s (STRESS_MIN_RATE),
    # no frame lost without being reported, the page answering clicks within 2 s (page-side).
    # SWITCHBOARD_STRESS=report prints its figures (ui/e2e/results/) without gating.
    if ! (cd ui && PATH="$UI_PATH" PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 STRESS_MIN_RATE="${STRESS_MIN_RATE:-5000}" \
      SWITCHBOARD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/switchboard" npm run --silent e2e -- e2e/frames-stress.spec.ts); then
      if [ "${SWITCHBOARD_STRESS:-gate}" = gate ]; then exit 1; fi
      echo "frame stress test reported failures (figures above); not gating: SWITCHBOARD_STRESS=${SWITCHBOARD_STRESS}"
    fi
    ;;
  *) echo "SWITCHBOARD_E2E must be gate or off" >&2; exit 2 ;;
esac
if [ "$DESKTOP" = gate ]; then
  step "desktop: clippy, build, unit tests (-p switchboard-desktop)"
  cargo clippy -p switchboard-desktop --all-targets --locked -- -D warnings
  cargo build -p switchboard-desktop --all-targets --locked
  cargo test -p switchboard-desktop --locked --no-fail-fast
fi
step "desktop: window, single instance, WebDriver Diagnosis run, no orphans, .deb (SWITCHBOARD_DESKTOP=$DESKTOP)"
if [ "$DESKTOP" = gate ]; then
  deb=$(bash "$ROOT/scripts/build-deb.sh" | tail -n 1)
  SWITCHBOARD_DEB="$deb" bash "$ROOT/tests/desktop/run.sh" window webdriver deb
else
  echo "skipped"
fi
step "endpoint acceptance (SWITCHBOARD_ACCEPTANCE=${SWITCHBOARD_ACCEPTANCE:-gate})"
case "${SWITCHBOARD_ACCEPTANCE:-gate}" in
  off) echo "skipped" ;;
  gate) bash "$ROOT/tests/endpoint-acceptance.sh" --no-setup --no-build ;;
  report)
    if ! bash "$ROOT/tests/endpoint-acceptance.sh" --no-setup --no-build; then
      echo "endpoint acceptance reported failures (see the table above); not gating: SWITCHBOARD_ACCEPTANCE=report"
    fi
    ;;
  *) echo "SWITCHBOARD_ACCEPTANCE must be report, gate or off" >&2; exit 2 ;;
esac
