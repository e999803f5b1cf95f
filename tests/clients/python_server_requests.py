"""The official Python MCP SDK answering a server's questions through the router: it declares
elicitation and sampling, calls server-everything's `trigger-elicitation-request` and
`trigger-sampling-request` tools (the server asks the client during the call) and checks
that its answers reached the server.

Usage: python_server_requests.py URL MODE   (MODE: `auto` for 2026-07-28, `legacy`)
Prints one JSON line with the tool results' text; exits 1 on any failure.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import Client, types


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def on_sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled-by-python"),
        model="python-test-model",
        stop_reason="endTurn",
    )


async def on_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada Python", "check": True})


async def main(url: str, mode: str) -> None:
    async with Client(
        url,
        mode=mode,
        read_timeout_seconds=60,
        sampling_callback=on_sampling,
        elicitation_callback=on_elicitation,
    ) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        out: dict[str, Any] = {"protocol_version": client.protocol_version}
        for suffix, args in [("trigger-sampling-request", {"prompt": "hi"}), ("trigger-elicitation-request", {})]:
            name = next((n for n in names if n.endswith(suffix)), None)
            if name is None:
                raise AssertionError(f"no tool ending in {suffix}: {names}")
            result = await client.call_tool(name, args)
            if result.is_error:
                raise AssertionError(f"{name} failed: {text_of(result)}")
            out[suffix] = text_of(result)
        print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
