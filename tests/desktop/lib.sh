# Helpers of the desktop tests (sourced): bounded waits, the process tree, screenshots.
# Every wait has a deadline and says what it waited for when it gives up.

fail() { printf 'desktop test FAILED: %s\n' "$*" >&2; exit 1; }
note() { printf '  %s\n' "$*" >&2; }

# wait_log FILE REGEX SECONDS — prints the first matching line once it appears.
wait_log() {
  local file=$1 re=$2 secs=$3 end=$((SECONDS + $3))
  while ((SECONDS < end)); do
    if grep -m1 -E "$re" "$file" 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  echo "--- last lines of $file:" >&2; tail -n 30 "$file" >&2 || true
  fail "no line matching /$re/ in $file within ${secs}s"
}

# descendants PID — every process below PID (children, grandchildren, …), one pid a line.
descendants() {
  ps -e -o pid=,ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END { for (p in parent) { q = p; while (q in parent && q != 1 && q != 0) { q = parent[q]; if (q == root) { print p; break } } } }'
}

# describe PID… — pid and command line of each process still alive.
describe() {
  local p
  for p in "$@"; do
    [ -r "/proc/$p/cmdline" ] && printf '%s %s\n' "$p" "$(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-160)"
  done
  return 0
}

# wait_gone SECONDS PID… — waits until none of the processes exists (zombies count as gone).
wait_gone() {
  local secs=$1 end=$((SECONDS + $1)); shift
  local p alive
  while ((SECONDS < end)); do
    alive=()
    for p in "$@"; do
      if [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]; then alive+=("$p"); fi
    done
    ((${#alive[@]} == 0)) && return 0
    sleep 0.5
  done
  echo "still running after ${secs}s:" >&2; describe "${alive[@]}" >&2
  return 1
}

# screenshot FILE — the whole X screen, retried until it is not (nearly) one colour: a blank or
# still-white window has a few colours, the rendered panel (text, cards, a chart) over a thousand.
screenshot() {
  local out=$1 end=$((SECONDS + 60)) colours=0
  while ((SECONDS < end)); do
    /usr/bin/import -window root "$out" 2>/dev/null || true
    colours=$(/usr/bin/convert "$out" -format '%k' info: 2>/dev/null || echo 0)
    ((colours > 400)) && { note "screenshot $out ($colours colours)"; return 0; }
    sleep 1
  done
  fail "the screen stayed (nearly) blank for 60s ($colours colours in $out)"
}

# test_config FILE — the built-in servers plus the rmcp fixture as a supervised stdio child.
test_config() {
  cat >"$1" <<TOML
[router]
mcp_json = []

[servers.vision]
builtin = "vision"
labels = ["vision", "thermal-analysis"]

[servers.knowledge]
builtin = "knowledge"
labels = ["rag", "knowledge"]

[servers.reasoning]
builtin = "reasoning"
labels = ["reasoning"]

[servers.fixture]
command = "$FIXTURE"
args = ["--transport", "stdio"]
TOML
}

# api BASE TOKEN PATH — GET an admin API path with the token.
api() { curl -fsS --max-time 10 -H "Authorization: Bearer $2" "$1$3"; }
