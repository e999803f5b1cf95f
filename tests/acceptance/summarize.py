"""Verdicts of tests/endpoint-acceptance.sh, from the files the tools wrote (stdlib only).

  summarize.py suite ROWS LABEL OUTDIR EXIT [--list FILE]
      Reads every <OUTDIR>/**/checks.json that a conformance `server` run wrote (Node's
      piped stdout is unreliable, the files are not) and appends one row per scenario to
      ROWS. With --list (the output of `conformance list --requirements REV`), scenarios
      the suite's own requirement set does not score for that revision are rows of their
      own kind that never fail the run, and a scored scenario without a result fails.
  summarize.py client ROWS LABEL EXIT JSONFILE
      One row per run in a client's JSON summary (tests/clients/*).
  summarize.py table ROWS
      Prints the table; exits 1 when any row failed.

A scenario fails when one of its checks is FAILURE; WARNING and SKIPPED checks are counted
and shown but do not fail it (as the suite itself decides).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


def scenario_of(run_dir: str) -> str:
    name = STAMP.sub("", run_dir)
    return name[len("server-"):] if name.startswith("server-") else name


def parse_list(text: str) -> tuple[set[str], dict[str, str]]:
    """Scored server scenarios and the reasons of the not-scored ones, from `conformance list`."""
    scored: set[str] = set()
    not_scored: dict[str, str] = {}
    section = None
    reason = ""
    for line in text.splitlines():
        if line.startswith("Server scenarios"):
            section = "server"
        elif line.startswith("Client scenarios"):
            section = "client"
        elif line.startswith("Run and reported, but never scored"):
            section = "unscored"
        elif section == "server" and line.startswith("  - "):
            scored.add(line[4:].strip())
        elif section == "unscored":
            m = re.match(r"^  (\S[^(]*?) \(\d+\):$", line)
            if m:
                reason = m.group(1)
            m = re.match(r"^    - (\S+) \[server\]$", line)
            if m:
                not_scored[m.group(1)] = reason
    return scored, not_scored


def append(rows: Path, row: dict) -> None:
    with rows.open("a") as f:
        f.write(json.dumps(row) + "\n")


def suite(rows: Path, label: str, outdir: Path, exit_code: int, list_file: Path | None) -> None:
    scored: set[str] | None = None
    not_scored: dict[str, str] = {}
    if list_file is not None:
        scored, not_scored = parse_list(list_file.read_text())
        if not scored:
            raise SystemExit(f"summarize: no server scenarios found in {list_file}")
    seen: set[str] = set()
    any_failed = False
    for checks_file in sorted(outdir.glob("**/checks.json")):
        scenario = scenario_of(checks_file.parent.name)
        seen.add(scenario)
        try:
            checks = json.loads(checks_file.read_text())
        except (OSError, json.JSONDecodeError) as e:
            checks = [{"status": "FAILURE", "name": "checks.json", "errorMessage": str(e)}]
        count = {s: sum(1 for c in checks if c.get("status") == s) for s in ("SUCCESS", "FAILURE", "WARNING", "SKIPPED")}
        failed = count["FAILURE"] > 0
        if scored is not None and scenario not in scored:
            verdict = "not scored: " + ("fail" if failed else "pass")
            note = not_scored.get(scenario, "not in the requirement set")
        else:
            verdict = "FAIL" if failed else ("skipped" if count["SUCCESS"] == 0 else "pass")
            any_failed |= failed
            note = "; ".join(
                f"{c.get('name') or c.get('id')}: {(c.get('errorMessage') or c.get('description') or '')[:120]}"
                for c in checks
                if c.get("status") == "FAILURE"
            )[:300]
        append(rows, {"suite": label, "scenario": scenario, **count, "verdict": verdict, "note": note})
    if scored is not None:
        for scenario in sorted(scored - seen):
            any_failed = True
            append(rows, {"suite": label, "scenario": scenario, "verdict": "FAIL", "note": "no result written"})
    if not seen:
        append(rows, {"suite": label, "scenario": "(run)", "verdict": "FAIL", "note": f"no checks.json under {outdir} (exit {exit_code})"})
    elif exit_code != 0 and not any_failed:
        append(rows, {"suite": label, "scenario": "(run)", "verdict": "FAIL", "note": f"suite exited {exit_code} with no failing scored scenario"})


def client(rows: Path, label: str, exit_code: int, json_file: Path) -> None:
    try:
        summary = json.loads(json_file.read_text().strip().splitlines()[-1])
    except (OSError, IndexError, json.JSONDecodeError) as e:
        append(rows, {"suite": label, "scenario": "(run)", "verdict": "FAIL", "note": f"no JSON summary (exit {exit_code}): {e}"})
        return
    for run in summary.get("runs", []):
        ok = "error" not in run and exit_code == 0
        note = run.get("error") or f"{run.get('protocol_version')}, {run.get('tools')} tools, {run.get('calls')} calls"
        append(rows, {"suite": label, "scenario": f"{summary.get('client')} mode={run.get('mode')}",
                      "SUCCESS": int(ok), "FAILURE": int(not ok), "verdict": "pass" if ok else "FAIL", "note": note})
    if exit_code != 0 and all("error" not in r for r in summary.get("runs", [])):
        append(rows, {"suite": label, "scenario": "(run)", "verdict": "FAIL", "note": f"exited {exit_code}"})


def table(rows_file: Path) -> int:
    rows = [json.loads(line) for line in rows_file.read_text().splitlines() if line.strip()] if rows_file.exists() else []
    w = max([len(r["scenario"]) for r in rows] + [8])
    print(f"\n{'suite':<24} {'scenario':<{w}} {'pass':>5} {'fail':>5} {'warn':>5} {'skip':>5}  verdict")
    print("-" * (24 + w + 36))
    for r in rows:
        print(f"{r['suite']:<24} {r['scenario']:<{w}} {r.get('SUCCESS', 0):>5} {r.get('FAILURE', 0):>5} "
              f"{r.get('WARNING', 0):>5} {r.get('SKIPPED', 0):>5}  {r['verdict']}")
    print()
    by_suite: dict[str, list[dict]] = {}
    for r in rows:
        by_suite.setdefault(r["suite"], []).append(r)
    for name, rs in by_suite.items():
        scored = [r for r in rs if not r["verdict"].startswith("not scored")]
        print(f"{name:<24} scenarios {sum(r['verdict'] == 'pass' for r in scored)}/{len(scored)} pass; "
              f"checks {sum(r.get('SUCCESS', 0) for r in scored)} pass, {sum(r.get('FAILURE', 0) for r in scored)} fail"
              + (f"; not scored {len(rs) - len(scored)} ({sum(r['verdict'].endswith('fail') for r in rs if r not in scored)} failing)"
                 if len(rs) > len(scored) else ""))
    failing = [r for r in rows if r["verdict"] == "FAIL"]
    if failing:
        print("\nfailures:")
        for r in failing:
            print(f"  {r['suite']} / {r['scenario']}: {r.get('note', '')}")
    passed = sum(r["verdict"] == "pass" for r in rows)
    print(f"\nacceptance: {passed} passed, {len(failing)} failed")
    return 1 if failing or not rows else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 6 and argv[1] == "suite":
        list_file = Path(argv[7]) if len(argv) >= 8 and argv[6] == "--list" else None
        suite(Path(argv[2]), argv[3], Path(argv[4]), int(argv[5]), list_file)
        return 0
    if len(argv) == 6 and argv[1] == "client":
        client(Path(argv[2]), argv[3], int(argv[4]), Path(argv[5]))
        return 0
    if len(argv) == 3 and argv[1] == "table":
        return table(Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
