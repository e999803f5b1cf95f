"""Acceptance client: the official Python MCP SDK (mcp 2.3.0) talking to the Switchboard router.

Usage: python_client.py URL [--everything PREFIX] [--fixture PREFIX] [--separator S] [--modes auto,legacy]

For each mode (`auto` probes server/discover and so speaks 2026-07-28 to the router;
`legacy` forces the 2025-11-25 initialize handshake and a session), it connects with
`mcp.Client(url)`, lists every tool (following cursors), checks that both upstreams'
prefixed tools are there (server-everything's `echo` and `get-sum`, the fixture's `echo`
and `add`), calls one tool of each and checks the results. Prints one JSON summary on
stdout; exits 1 on any failure, with the reason in the summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from mcp import Client


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def run_mode(url: str, mode: str, ev: str, fx: str, sep: str) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": mode}
    async with Client(url, mode=mode, read_timeout_seconds=30) as client:
        out["protocol_version"] = client.protocol_version
        names: list[str] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        out["tools"] = len(names)
        want = [f"{ev}{sep}echo", f"{ev}{sep}get-sum", f"{fx}{sep}echo", f"{fx}{sep}add"]
        missing = [n for n in want if n not in names]
        if missing:
            raise AssertionError(f"tools missing from tools/list: {missing} (got {sorted(names)})")
        unprefixed = [n for n in names if not (n.startswith(ev + sep) or n.startswith(fx + sep))]
        if unprefixed:
            raise AssertionError(f"tools without a server prefix: {unprefixed}")

        r = await client.call_tool(f"{ev}{sep}echo", {"message": "hello from python"})
        if r.is_error or text_of(r) != "Echo: hello from python":
            raise AssertionError(f"{ev}{sep}echo returned {r.model_dump(mode='json')}")
        r = await client.call_tool(f"{fx}{sep}echo", {"text": "hello from python"})
        if r.is_error or text_of(r) != "hello from python":
            raise AssertionError(f"{fx}{sep}echo returned {r.model_dump(mode='json')}")
        if r.structured_content != {"text": "hello from python"}:
            raise AssertionError(f"{fx}{sep}echo structuredContent {r.structured_content}")
        r = await client.call_tool(f"{ev}{sep}get-sum", {"a": 2, "b": 40})
        if r.is_error or "42" not in text_of(r):
            raise AssertionError(f"{ev}{sep}get-sum returned {r.model_dump(mode='json')}")
        out["calls"] = 3
    return out


def describe(e: BaseException) -> str:
    """The innermost errors of an exception (anyio task groups wrap them in ExceptionGroups)."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}"


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--everything", default="everything", help="server name of server-everything")
    ap.add_argument("--fixture", default="fixture", help="server name of the mcp-fixture")
    ap.add_argument("--separator", default="__")
    ap.add_argument("--modes", default="auto,legacy")
    args = ap.parse_args()
    summary: dict[str, Any] = {"client": "python mcp 2.3.0", "url": args.url, "runs": [], "ok": True}
    for mode in [m for m in args.modes.split(",") if m]:
        try:
            summary["runs"].append(
                await asyncio.wait_for(
                    run_mode(args.url, mode, args.everything, args.fixture, args.separator), timeout=90
                )
            )
        except BaseException as e:  # noqa: BLE001 - every failure is reported, none hidden
            if isinstance(e, KeyboardInterrupt):
                raise
            summary["ok"] = False
            summary["runs"].append({"mode": mode, "error": describe(e)})
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
