#!/usr/bin/env bash
# Installs what Switchboard needs on a fresh Debian 12 machine (as root), skipping
# whatever is already there. Usage: scripts/setup.sh app|ui|desktop|test
#   app      — system libraries to build and run the router
#   ui       — the above plus Node 22 (.cache/node, see test) and the control panel's npm
#              packages (ui/package-lock.json, `npm ci` into ui/node_modules; the Tauri CLI
#              for the .deb is one of them), to build ui/dist
#   desktop  — the above plus the Debian packages the desktop shell (src-tauri) builds and
#              runs with: WebKitGTK 4.1, GTK 3, librsvg, libayatana-appindicator3, xdo
#   test     — the above plus the test peers: Node 22, server-everything, the official
#              conformance suite and the TypeScript SDK client pinned in tests/node, installed
#              into .cache/node; the Python SDK (mcp, pinned in tests/clients/requirements.txt)
#              in a venv at .cache/python; Debian's Chromium for the panel's Playwright tests;
#              for the desktop tests Xvfb, ImageMagick, WebKitWebDriver, a D-Bus session
#              daemon, tauri-driver (cargo install into .cache/tauri-driver) and selenium
#              (tests/desktop/requirements.txt, a venv at .cache/python-webdriver)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=${1:-app}

log() { printf '\033[1msetup:\033[0m %s\n' "$*" >&2; }

apt_need() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

# Build prerequisites of the Rust workspace (reqwest uses the system OpenSSL).
apt_need build-essential pkg-config libssl-dev ca-certificates

if ! command -v cargo >/dev/null 2>&1; then
  if [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
  else
    log "cargo is not installed: install the Rust toolchain (rustup) and rerun"
    exit 1
  fi
fi

# Node 22 and the Node test peers, in .cache/node (Debian's own node is 20).
node_peers() {
  command -v npm >/dev/null 2>&1 || apt_need nodejs npm
  NODE_DIR="$ROOT/.cache/node"
  mkdir -p "$NODE_DIR"
  local stamp
  stamp="$NODE_DIR/.installed-$(sha256sum "$ROOT/tests/node/package-lock.json" | cut -c1-16)"
  if [ ! -f "$stamp" ] || [ ! -x "$NODE_DIR/node_modules/.bin/node" ]; then
    log "installing Node test peers into .cache/node"
    cp "$ROOT/tests/node/package.json" "$ROOT/tests/node/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
    rm -f "$NODE_DIR"/.installed-*
    touch "$stamp"
  fi
  "$NODE_DIR/node_modules/.bin/node" --version | grep -q '^v22\.' || { log "Node 22 missing in .cache/node"; exit 1; }
}

# The control panel's packages (ui/node_modules), installed with the Node 22 of .cache/node.
ui_packages() {
  local stamp="$ROOT/ui/node_modules/.installed-$(sha256sum "$ROOT/ui/package-lock.json" | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    log "installing the panel's npm packages into ui/node_modules"
    (cd "$ROOT/ui" && PATH="$NODE_DIR/node_modules/.bin:$PATH" PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
      npm ci --no-audit --no-fund --loglevel=error)
    rm -f "$ROOT/ui/node_modules"/.installed-*
    touch "$stamp"
  fi
}

case "$MODE" in
  app) ;;
  ui | desktop | test)
    node_peers
    ui_packages
    ;;
  *) log "unknown mode $MODE (app, ui, desktop or test)"; exit 2 ;;
esac

if [ "$MODE" = desktop ] || [ "$MODE" = test ]; then
  # The desktop shell's build and run-time libraries (libappindicator3-dev does not exist on
  # bookworm: the ayatana one is what tauri's tray loads).
  apt_need libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev libxdo-dev file
fi

if [ "$MODE" = test ]; then
  # The browser the panel's Playwright tests drive (never one Playwright downloads).
  [ -x /usr/bin/chromium ] || apt_need chromium

  # The Python SDK client of the acceptance test, in its own venv.
  command -v python3 >/dev/null 2>&1 || apt_need python3
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_need python3-venv
  PY_DIR="$ROOT/.cache/python"
  py_stamp="$PY_DIR/.installed-$(sha256sum "$ROOT/tests/clients/requirements.txt" | cut -c1-16)"
  if [ ! -f "$py_stamp" ] || [ ! -x "$PY_DIR/bin/python" ]; then
    log "installing the Python MCP SDK into .cache/python"
    rm -rf "$PY_DIR"
    python3 -m venv "$PY_DIR"
    "$PY_DIR/bin/python" -m pip install --quiet --disable-pip-version-check -r "$ROOT/tests/clients/requirements.txt"
    touch "$py_stamp"
  fi
fi
if [ "$MODE" = test ]; then
  # The desktop tests: a virtual X server and screenshots, WebKit's WebDriver, a session bus.
  apt_need xvfb xauth imagemagick webkit2gtk-driver dbus-daemon procps curl x11-utils
  # tauri-driver 2 (the index's newest is a 3.0 alpha), built once into .cache/tauri-driver.
  if [ ! -x "$ROOT/.cache/tauri-driver/bin/tauri-driver" ]; then
    log "installing tauri-driver into .cache/tauri-driver"
    cargo install tauri-driver --version '^2' --locked --root "$ROOT/.cache/tauri-driver" --quiet
  fi
  WD_DIR="$ROOT/.cache/python-webdriver"
  wd_stamp="$WD_DIR/.installed-$(sha256sum "$ROOT/tests/desktop/requirements.txt" | cut -c1-16)"
  if [ ! -f "$wd_stamp" ] || [ ! -x "$WD_DIR/bin/python" ]; then
    log "installing selenium into .cache/python-webdriver"
    rm -rf "$WD_DIR"
    python3 -m venv "$WD_DIR"
    "$WD_DIR/bin/python" -m pip install --quiet --disable-pip-version-check -r "$ROOT/tests/desktop/requirements.txt"
    touch "$wd_stamp"
  fi
fi
log "ready ($MODE)"
