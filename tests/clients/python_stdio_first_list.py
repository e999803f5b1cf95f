"""The official Python MCP SDK as a desktop client would use it: it spawns
`switchboard serve --stdio …` itself and lists tools at once, while the router's upstreams
may still be handshaking.

Usage: python_stdio_first_list.py MODE -- COMMAND ARGS…

MODE is `auto` (2026-07-28 through server/discover) or `legacy` (2025-11-25 initialize).
Prints one JSON line: the protocol version, the names of the first `list_tools` page
(all pages followed) and its `ttlMs` (when the revision carries one). Exits 1 on errors.
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def main(mode: str, command: list[str]) -> None:
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode=mode, read_timeout_seconds=60) as client:
        names: list[str] = []
        ttls: list[int | None] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names += [t.name for t in page.tools]
            ttls.append(page.model_dump(mode="json", by_alias=True).get("ttlMs"))
            cursor = page.next_cursor
            if not cursor:
                break
        print(json.dumps({"protocol_version": client.protocol_version, "tools": names, "ttl_ms": ttls}))


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1], sys.argv[3:]))
