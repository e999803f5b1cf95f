#!/usr/bin/env bash
# Builds the desktop app's Debian package (desktop entry, icons, /usr/bin/switchboard-desktop)
# with the npm Tauri CLI (`@tauri-apps/cli`, a dev dependency of ui/: no `cargo install
# tauri-cli`). Usage: scripts/build-deb.sh [--release]
#
# Debug by default: it reuses the test suite's build of the shell (the CLI builds what
# `cargo build -p switchboard-desktop` builds; tauri's `custom-protocol` feature is always on),
# so in CI it only links and packages. `--release` builds an optimised package to ship.
# Prints the .deb's path on its last line.
#
# The CLI expects tauri.conf.json, the UI's output and the icons under its app directory; this
# repository keeps tauri.conf.json at its root (src-tauri/tauri.conf.json is a committed
# symlink to it, which tauri-build needs too), so for the CLI's run src-tauri/ also gets
# symlinks to ui/ and assets/ (removed again afterwards) and TAURI_APP_PATH points at it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROFILE=--debug
case "${1:-}" in
  "") ;;
  --release) PROFILE= ;;
  *) echo "usage: scripts/build-deb.sh [--release]" >&2; exit 2 ;;
esac
bash "$ROOT/scripts/setup.sh" desktop
command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"
cd "$ROOT"
export PATH="$ROOT/.cache/node/node_modules/.bin:$PATH"
[ -f ui/dist/index.html ] || (cd ui && npm run --silent build)

links=(ui assets)
cleanup() { for l in "${links[@]}"; do [ -L "src-tauri/$l" ] && rm -f "src-tauri/$l"; done; return 0; }
trap cleanup EXIT
for l in "${links[@]}"; do ln -sfn "../$l" "src-tauri/$l"; done

# shellcheck disable=SC2086
TAURI_APP_PATH=src-tauri ui/node_modules/.bin/tauri build $PROFILE --bundles deb --ci >&2
profile_dir=$([ -n "$PROFILE" ] && echo debug || echo release)
deb=$(ls -t "${CARGO_TARGET_DIR:-$ROOT/target}/$profile_dir/bundle/deb/"*.deb | head -1)
dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p' >&2
echo "$deb"
