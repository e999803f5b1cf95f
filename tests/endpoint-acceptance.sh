#!/usr/bin/env bash
# Acceptance test of the federated /mcp endpoint of `switchboard serve`, with real peers:
#
#  a. the official conformance server suites against the router fronting
#     `mcp-fixture --profile conformance` (both eras) over HTTP:
#       conformance 0.1.16 (active suite), 0.2 --spec-version 2025-11-25,
#       0.2 --requirements 2026-07-28 (scenarios that revision does not score, per the
#       suite's own `list --requirements`, are reported but never fail the run);
#  b. the 2026-07-28 run again with the fixture forced legacy-only (--era legacy);
#  c. the Python SDK (mcp 2.3.0, Client(url)) and the TypeScript SDK
#     (@modelcontextprotocol/client 2.x, versionNegotiation auto) as clients of a router
#     fronting server-everything over stdio (--upstream-cmd) and the fixture over HTTP
#     (--upstream) with --prefix always; each lists, checks and calls tools of both.
#
# Every server is started here on 127.0.0.1 port 0 and stopped on exit. Results are read
# from the files the tools write, then printed as one table; exit status 1 on any failure.
#
# Usage: tests/endpoint-acceptance.sh [--no-setup] [--no-build] [--keep]
#   --no-setup  skip scripts/setup.sh test (peers already installed)
#   --no-build  use the binaries already in target/debug (scripts/run-tests.sh built them)
#   --keep      keep the work directory (logs, conformance output) and print its path
# Env: SUITE_TIMEOUT (seconds per conformance run, default 900).
set -Eeuo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SETUP=1 BUILD=1 KEEP=0
for a in "$@"; do
  case "$a" in
    --no-setup) SETUP=0 ;;
    --no-build) BUILD=0 ;;
    --keep) KEEP=1 ;;
    *) echo "usage: $0 [--no-setup] [--no-build] [--keep]" >&2; exit 2 ;;
  esac
done
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}

log() { printf '\033[1macceptance:\033[0m %s\n' "$*" >&2; }

if ((SETUP)); then bash "$ROOT/scripts/setup.sh" test; fi
command -v cargo >/dev/null 2>&1 || . "$HOME/.cargo/env"
if ((BUILD)); then
  log "building switchboard and mcp-fixture"
  (cd "$ROOT" && cargo build -p switchboard-app -p switchboard-fixtures --locked)
fi
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/debug
NODE_DIR=${SWITCHBOARD_NODE_DIR:-$ROOT/.cache/node}
NODE=$NODE_DIR/node_modules/.bin/node
EVERYTHING_JS=$NODE_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js
PY=$ROOT/.cache/python/bin/python
for f in "$BIN/switchboard" "$BIN/mcp-fixture" "$NODE" "$EVERYTHING_JS" "$PY"; do
  [ -x "$f" ] || [ -f "$f" ] || { log "missing $f (run scripts/setup.sh test and cargo build)"; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sb-acceptance.XXXXXX")
ROWS=$WORK/rows.jsonl
: >"$ROWS"
: >"$WORK/empty.toml" # routers get only the upstreams named on their command line
PIDS=()

stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  trap - ERR
  [ "$BASHPID" = "$$" ] || return 0 # only the script itself, never a subshell, cleans up
  stop_all
  if ((KEEP)); then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'log "interrupted by a signal"; exit 130' INT TERM HUP
trap 'log "failed (status $?) at line $LINENO: $BASH_COMMAND"' ERR

# start NAME CMD…: runs CMD in the background (stdout/stderr in $WORK/NAME.{out,err}) and
# sets URL to what it prints as `listening on URL` (within 60 s).
start() {
  local name=$1
  shift
  # Created here, not by the child's redirection, so the wait below never races its start.
  : >"$WORK/$name.out"
  : >"$WORK/$name.err"
  "$@" >>"$WORK/$name.out" 2>>"$WORK/$name.err" &
  local pid=$!
  PIDS+=("$pid")
  URL=
  local line
  for _ in $(seq 600); do
    while IFS= read -r line; do
      if [[ $line == "listening on http"* ]]; then
        URL=${line#listening on }
        URL=${URL%% *}
        return 0
      fi
    done <"$WORK/$name.out"
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  log "$name did not start; its stderr:"
  tail -n 20 "$WORK/$name.err" >&2
  return 1
}

# wait_ready DB N: until the router's store shows N servers, all ready (within 90 s).
wait_ready() {
  local db=$1 want=$2 rows
  for _ in $(seq 180); do
    rows=$("$BIN/switchboard" --config "$WORK/empty.toml" --db "$db" servers --json 2>/dev/null || true)
    if python3 -c 'import json,sys; r=json.loads(sys.argv[1] or "[]"); sys.exit(0 if len(r)==int(sys.argv[2]) and all(x["state"]=="ready" for x in r) else 1)' "$rows" "$want" 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  log "upstreams not ready: $rows"
  return 1
}

# router NAME ARGS…: starts `switchboard serve` on 127.0.0.1:0 with its own store; sets URL.
router() {
  local name=$1
  shift
  start "$name" env RUST_LOG=warn "$BIN/switchboard" --config "$WORK/empty.toml" --db "$WORK/$name.db" \
    serve --listen 127.0.0.1:0 "$@"
}

# conformance LABEL PACKAGE ARGS…: one server-suite run against $ROUTER_URL, summarised into $ROWS.
conformance() {
  local label=$1 pkg=$2
  shift 2
  local out=$WORK/out-${label//[^A-Za-z0-9]/_}
  local list_args=()
  if [ "${1:-}" = --requirements ]; then
    "$NODE" "$NODE_DIR/node_modules/$pkg/dist/index.js" list --requirements "$2" >"$out.list" 2>&1
    list_args=(--list "$out.list")
  fi
  log "$label: $pkg server${*:+ $*} against $ROUTER_URL"
  local rc=0
  # Output to files, not pipes: Node drops piped stdout on exit.
  timeout "$SUITE_TIMEOUT" "$NODE" "$NODE_DIR/node_modules/$pkg/dist/index.js" server --url "$ROUTER_URL" "$@" \
    -o "$out" >"$out.log" 2>&1 || rc=$?
  python3 "$ROOT/tests/acceptance/summarize.py" suite "$ROWS" "$label" "$out" "$rc" "${list_args[@]}"
}

# --- a. conformance through the router, fixture in both eras -------------------------------
start fixture-a "$BIN/mcp-fixture" --transport http --profile conformance
router router-a --upstream "fx=$URL"
ROUTER_URL=$URL
wait_ready "$WORK/router-a.db" 1
conformance "0.1.16 active" conformance-0-1
conformance "0.2 2025-11-25" conformance-0-2 --spec-version 2025-11-25
conformance "0.2 2026-07-28" conformance-0-2 --requirements 2026-07-28
stop_all

# --- b. 2026-07-28 with a legacy-only upstream ----------------------------------------------
start fixture-b "$BIN/mcp-fixture" --transport http --profile conformance --era legacy
router router-b --upstream "fx=$URL"
ROUTER_URL=$URL
wait_ready "$WORK/router-b.db" 1
conformance "0.2 2026-07-28 legacy-up" conformance-0-2 --requirements 2026-07-28
stop_all

# --- c. SDK clients through the router, two upstreams, --prefix always ----------------------
start fixture-c "$BIN/mcp-fixture" --transport http
router router-c --prefix always --upstream "fixture=$URL" \
  --upstream-cmd "everything=$NODE $EVERYTHING_JS stdio"
ROUTER_URL=$URL
wait_ready "$WORK/router-c.db" 2
log "clients against $ROUTER_URL"
rc=0
timeout 240 "$PY" "$ROOT/tests/clients/python_client.py" "$ROUTER_URL" >"$WORK/python.json" 2>"$WORK/python.err" || rc=$?
python3 "$ROOT/tests/acceptance/summarize.py" client "$ROWS" "client python" "$rc" "$WORK/python.json"
((rc == 0)) || tail -n 20 "$WORK/python.err" >&2
rc=0
timeout 240 "$NODE" "$ROOT/tests/clients/ts_client.mjs" "$ROUTER_URL" >"$WORK/ts.json" 2>"$WORK/ts.err" || rc=$?
python3 "$ROOT/tests/acceptance/summarize.py" client "$ROWS" "client typescript" "$rc" "$WORK/ts.json"
((rc == 0)) || tail -n 20 "$WORK/ts.err" >&2
stop_all

rc=0
python3 "$ROOT/tests/acceptance/summarize.py" table "$ROWS" || rc=$?
exit "$rc"
