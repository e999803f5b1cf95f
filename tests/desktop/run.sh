#!/usr/bin/env bash
# The desktop app's acceptance, headless: everything runs under Xvfb (xvfb-run) inside a
# private D-Bus session (dbus-run-session, as a desktop session has one: the single-instance
# plugin and the tray's indicator talk over it). Each part starts from an empty home.
#
#   window     the built binary starts; the panel connects to the router's event stream and
#              every server is ready (the tray's status line says so); a screenshot of the
#              screen -> ui/e2e/screenshots/desktop.png; a second launch exits and the first
#              instance focuses its window; SIGTERM quits; no child process is left; the
#              window's size and position were saved
#   webdriver  tauri-driver + WebKitWebDriver (tests/desktop/webdriver.py): the remembered
#              window size comes back, the Overview shows the servers ready, one Diagnosis run
#              on a real thermal image handed to the page by script ends with its severity
#              (screenshot -> ui/e2e/screenshots/desktop-diagnosis.png), the panel's call of the
#              shell's pick_image opens the native file dialog (desktop-picker.png), closing the
#              window quits the app and no child process is left; tauri-driver gets SIGTERM
#   deb        the .deb built by scripts/build-deb.sh installs with apt-get, the installed
#              /usr/bin/switchboard-desktop starts and serves the panel, quits cleanly, and
#              the package is removed again
#
# Usage: tests/desktop/run.sh [window] [webdriver] [deb]   (default: window webdriver)
# Env: SWITCHBOARD_DESKTOP_BIN (default target/debug/switchboard-desktop), SWITCHBOARD_DEB
# (default: the newest target/*/bundle/deb/*.deb), SWITCHBOARD_THERMAL_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

if [ -z "${SWITCHBOARD_DESKTOP_INNER:-}" ]; then
  # The whole run is bounded; dbus-run-session ends the bus, xvfb-run the X server.
  exec timeout --signal=TERM --kill-after=30 900 env SWITCHBOARD_DESKTOP_INNER=1 \
    dbus-run-session -- xvfb-run -a -s '-screen 0 1280x800x24' bash "${BASH_SOURCE[0]}" "$@"
fi

# shellcheck source=tests/desktop/lib.sh
. "$ROOT/tests/desktop/lib.sh"
PARTS=("$@")
((${#PARTS[@]})) || PARTS=(window webdriver)
BIN=${SWITCHBOARD_DESKTOP_BIN:-$TARGET/debug/switchboard-desktop}
FIXTURE=$TARGET/debug/mcp-fixture
THERMAL=${SWITCHBOARD_THERMAL_DIR:-$ROOT/../shared/data/thermal}
SHOTS=$ROOT/ui/e2e/screenshots
WORK=$(mktemp -d /tmp/switchboard-desktop.XXXXXX)
[ -x "$FIXTURE" ] || fail "$FIXTURE is missing (cargo build --all-targets builds it)"
mkdir -p "$SHOTS"
note "display $DISPLAY, D-Bus ${DBUS_SESSION_BUS_ADDRESS%%,*}, work dir $WORK"

# A fresh home: the window state, the database, the config.
new_home() {
  local h=$WORK/$1
  mkdir -p "$h/home" "$h/config" "$h/data" "$h/cache"
  export HOME=$h/home XDG_CONFIG_HOME=$h/config XDG_DATA_HOME=$h/data XDG_CACHE_HOME=$h/cache
  test_config "$h/switchboard.toml"
  export SWITCHBOARD_CONFIG=$h/switchboard.toml SWITCHBOARD_DB=$h/data/switchboard.db
  HOME_DIR=$h
}

# start_app LOG [BINARY] — sets APP_PID, PANEL (the printed URL), BASE and TOKEN.
start_app() {
  local log=$1 bin=${2:-$BIN}
  RUST_LOG=info "$bin" 2>"$log" &
  APP_PID=$!
  PANEL=$(wait_log "$log" '^panel: http' 120 | sed 's/^panel: //')
  BASE=${PANEL%%/#*}
  TOKEN=${PANEL#*#token=}
  note "app pid $APP_PID, panel at $BASE"
}

# quit_and_check LOG HOW — quits the app (HOW: term), then: it exits 0 and every process that
# was below it is gone.
check_gone() {
  local before=$1
  # shellcheck disable=SC2086
  wait_gone 30 $before || fail "child processes of the app outlived it"
  note "no child process left ($(echo $before | wc -w) were running under the app)"
}

part_window() {
  echo "== desktop: window (start, live panel, screenshot, single instance, SIGTERM, no orphans)"
  new_home window
  start_app "$HOME_DIR/app.log"
  wait_log "$HOME_DIR/app.log" 'tray status: 4 ready · 0 degraded · 0 unavailable$' 120 >/dev/null
  note "tray: 4 ready · 0 degraded · 0 unavailable"
  # The window's panel is connected once the event stream has a subscriber.
  local end=$((SECONDS + 90)) subs=0
  while ((SECONDS < end)); do
    subs=$(api "$BASE" "$TOKEN" /api/overview | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["subscribers"])' 2>/dev/null || echo 0)
    ((subs > 0)) && break
    sleep 0.5
  done
  ((subs > 0)) || fail "the window's panel never opened the event stream (/api/overview: no subscriber in 90s)"
  note "the window's panel is connected to the event stream"
  screenshot "$SHOTS/desktop.png"
  local kids procs
  kids=$(descendants "$APP_PID")
  # shellcheck disable=SC2086
  procs=$(describe $kids)
  [[ $procs == *mcp-fixture* ]] || { echo "$procs" >&2; fail "the fixture is not a child of the app"; }
  note "processes under the app: $(echo "$procs" | awk '{print $2}' | xargs -n1 basename | sort | uniq -c | xargs)"

  # A second launch hands over to the first instance and exits.
  local rc=0
  timeout 60 "$BIN" 2>"$HOME_DIR/second.log" || rc=$?
  ((rc == 0)) || { cat "$HOME_DIR/second.log" >&2; fail "the second launch exited $rc"; }
  grep -q '^panel:' "$HOME_DIR/second.log" && fail "the second launch started a router of its own"
  wait_log "$HOME_DIR/app.log" 'a second launch: focusing the window' 30 >/dev/null
  note "a second launch exited 0 and the first instance focused its window"

  kill -TERM "$APP_PID"
  local end2=$((SECONDS + 60))
  while kill -0 "$APP_PID" 2>/dev/null && ((SECONDS < end2)); do sleep 0.5; done
  kill -0 "$APP_PID" 2>/dev/null && fail "the app did not quit within 60s of SIGTERM"
  rc=0; wait "$APP_PID" || rc=$?
  ((rc == 0)) || { tail -20 "$HOME_DIR/app.log" >&2; fail "the app exited $rc after SIGTERM"; }
  grep -q 'router stopped' "$HOME_DIR/app.log" || fail "the app quit without shutting the router down"
  check_gone "$kids"
  local state=$XDG_CONFIG_HOME/dev.switchboard.desktop/.window-state.json
  [ -s "$state" ] || fail "no window state saved at $state"
  note "window state saved: $(tr -d ' \n' <"$state" | cut -c1-120)"
}

part_webdriver() {
  echo "== desktop: webdriver (tauri-driver + WebKitWebDriver: remembered size, Overview, one Diagnosis run, close -> no orphans)"
  new_home webdriver
  # A remembered size from an earlier run: the window must come back with it.
  mkdir -p "$XDG_CONFIG_HOME/dev.switchboard.desktop"
  printf '{"main":{"width":1100,"height":720,"x":40,"y":30,"prev_x":40,"prev_y":30,"maximized":false,"visible":true,"decorated":true,"fullscreen":false}}' \
    >"$XDG_CONFIG_HOME/dev.switchboard.desktop/.window-state.json"
  local driver=$ROOT/.cache/tauri-driver/bin/tauri-driver
  [ -x "$driver" ] || fail "$driver is missing (scripts/setup.sh test installs it)"
  local port native
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  native=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$driver" --port "$port" --native-port "$native" --native-driver /usr/bin/WebKitWebDriver >"$HOME_DIR/driver.log" 2>&1 &
  local driver_pid=$!
  # tauri-driver only ever gets SIGTERM: after SIGKILL its WebKitWebDriver child is orphaned.
  trap 'kill -TERM '"$driver_pid"' 2>/dev/null || true' EXIT
  local rc=0
  "$ROOT/.cache/python-webdriver/bin/python" "$ROOT/tests/desktop/webdriver.py" \
    --driver "http://127.0.0.1:$port" --app "$BIN" --image "$THERMAL/wm01_200_deg_neutral.jpg" \
    --shots "$SHOTS" --expect-size 1100x720 || rc=$?
  kill -TERM "$driver_pid" 2>/dev/null || true
  wait_gone 30 "$driver_pid" || fail "tauri-driver did not stop on SIGTERM"
  trap - EXIT
  ((rc == 0)) || { echo "--- tauri-driver log:" >&2; tail -30 "$HOME_DIR/driver.log" >&2; fail "the WebDriver test failed"; }
}

part_deb() {
  echo "== desktop: deb (apt-get install, the installed app starts and serves the panel, quits cleanly)"
  local deb=${SWITCHBOARD_DEB:-}
  [ -n "$deb" ] || deb=$(ls -t "$TARGET"/*/bundle/deb/*.deb 2>/dev/null | head -1 || true)
  [ -n "$deb" ] && [ -f "$deb" ] || fail "no .deb found (scripts/build-deb.sh builds it)"
  note "installing $deb"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$(readlink -f "$deb")" >"$WORK/apt.log" 2>&1 \
    || { tail -20 "$WORK/apt.log" >&2; fail "apt-get install of $deb failed"; }
  [ -x /usr/bin/switchboard-desktop ] || fail "the package installed no /usr/bin/switchboard-desktop"
  local pkg
  pkg=$(dpkg-deb -f "$deb" Package)
  note "installed package $pkg: $(dpkg -L "$pkg" | grep -E 'bin/|\.desktop$|icons/.*128x128' | xargs)"
  new_home deb
  start_app "$HOME_DIR/app.log" /usr/bin/switchboard-desktop
  curl -fsS --max-time 10 "$BASE/healthz" >/dev/null || fail "/healthz of the installed app does not answer"
  curl -fsS --max-time 10 "$BASE/" | grep -q '<div id="root">' || fail "the installed app does not serve the panel"
  wait_log "$HOME_DIR/app.log" 'tray status: 4 ready · 0 degraded · 0 unavailable$' 120 >/dev/null
  local end=$((SECONDS + 90)) subs=0
  while ((SECONDS < end)); do
    subs=$(api "$BASE" "$TOKEN" /api/overview | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"]["subscribers"])' 2>/dev/null || echo 0)
    ((subs > 0)) && break
    sleep 0.5
  done
  ((subs > 0)) || fail "the installed app's window never opened the event stream"
  screenshot "$WORK/deb.png"
  mkdir -p "$ROOT/ui/e2e/results" && cp "$WORK/deb.png" "$ROOT/ui/e2e/results/desktop-deb.png"
  note "the installed app serves the panel and its window is connected"
  local kids
  kids=$(descendants "$APP_PID")
  kill -TERM "$APP_PID"
  local rc=0; wait "$APP_PID" || rc=$?
  ((rc == 0)) || fail "the installed app exited $rc after SIGTERM"
  check_gone "$kids"
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -q "$pkg" >>"$WORK/apt.log" 2>&1 || fail "apt-get remove $pkg failed"
  note "package $pkg removed again"
}

for p in "${PARTS[@]}"; do
  case $p in
    window) part_window ;;
    webdriver) part_webdriver ;;
    deb) part_deb ;;
    *) fail "unknown part $p (window, webdriver, deb)" ;;
  esac
done
rm -rf "$WORK"
echo "desktop tests: ${#PARTS[@]} passed, 0 failed"
