#!/usr/bin/env python3
"""What a catalog rebuild costs when one small server changes its tools beside a large one.

Usage: rebuild_cost.py TOOLWEAVE_BINARY FIXTURE_BINARY [TOOLS]
Starts `toolweave serve` over stdio (through the official MCP Python SDK) in front of two
fixture servers: `big` serving TOOLS synthetic tools (default 10,000) and `small`, the fixture's
own tools. The first search builds the catalog; then, five times, code makes `small` register a
new tool (it sends notifications/tools/list_changed) and the next search rebuilds the catalog.
Prints each build's time as the gateway logs it (`TOOLWEAVE_LOG=toolweave_core=debug`: "built
the catalog", measured on the blocking thread that builds it).
"""
import asyncio
import json
import os
import re
import sys
import tempfile

from mcp import Client
from mcp.client.stdio import StdioServerParameters

REBUILDS = 5
EXTRA = sys.argv[4:]


async def main(binary: str, fixture: str, tools: int) -> None:
    folder = tempfile.mkdtemp()
    config = os.path.join(folder, "mcp.json")
    with open(config, "w") as file:
        json.dump({"mcpServers": {
            "big": {"command": fixture, "args": ["--name", "big", "--tools", str(tools)]},
            "small": {"command": fixture, "args": ["--name", "small"]},
        }}, file)
    log = os.path.join(folder, "stderr.log")
    env = dict(os.environ, TOOLWEAVE_LOG="toolweave_core=debug", XDG_CONFIG_HOME=folder)
    params = StdioServerParameters(
        command="sh", args=["-c", f'exec "$0" "$@" 2>{log}', binary, "serve", "--config", config, *EXTRA],
        env=env,
    )
    async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
        await client.call_tool("search_tools", {"query": "list invoices"})
        for round in range(REBUILDS):
            result = await client.call_tool(
                "execute_code", {"code": f"await tools.small.register({{ name: 'added_{round}' }}); return 1"})
            assert not result.is_error, result
            await asyncio.sleep(0.5)
            await client.call_tool("search_tools", {"query": f"added {round}"})
    builds = [(int(tools), float(took)) for tools, took in re.findall(
        r'built the catalog tools=(\d+) took_ms=([\d.]+)', open(log).read())]
    print(f"{tools} synthetic tools beside a small server; catalog builds (tools, ms):")
    for count, took in builds:
        print(f"  {count:>6} tools: {took:8.1f} ms")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10_000))
