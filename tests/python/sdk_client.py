#!/usr/bin/env python3
"""Drives `toolweave serve` with the official MCP Python SDK as the client.

Usage: sdk_client.py TOOLWEAVE_BINARY CONFIG
Checks tools/list, an execution that calls three upstream servers at once, and a search.
Exits 0 and prints "sdk_client: ok" when every check passes; prints the failure and exits 1 otherwise.
"""
import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

CODE = """
const [sum, created, dirs] = await Promise.all([
  tools.everything.get_sum({ a: 2, b: 5 }),
  tools.memory.create_entities({ entities: [{ name: "Grace", entityType: "person", observations: [] }] }),
  tools.filesystem.list_allowed_directories({}),
]);
const graph = await tools.memory.read_graph({});
console.log("entities:", graph.entities.length);
return { sum, people: graph.entities.map((e: { name: string }) => e.name) };
"""


async def main(binary: str, config: str) -> None:
    params = StdioServerParameters(command=binary, args=["serve", "--config", config, "--timeout-ms", "3000"])
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        assert names == ["search_tools", "describe_tools", "execute_code"], names

        # A search waits only briefly for servers still starting, so it is asked until all three
        # npm servers have answered (node starts them in seconds on a busy machine); the execution
        # after it then runs well within its 3 s, which the busy loop at the end uses up.
        wanted = {
            "add two numbers": "everything.get_sum",
            "create entities in the knowledge graph": "memory.create_entities",
            "list allowed directories": "filesystem.list_allowed_directories",
        }
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while wanted:
            for query, name in list(wanted.items()):
                found = await client.call_tool("search_tools", {"query": query})
                assert not found.is_error, found
                if any(hit["name"] == name for hit in found.structured_content["results"]):
                    del wanted[query]
            assert loop.time() < deadline, f"not found within 60 s: {sorted(wanted.values())}"
            if wanted:
                await asyncio.sleep(0.2)

        result = await client.call_tool("execute_code", {"code": CODE})
        text = "\n".join(getattr(item, "text", "") for item in result.content)
        assert not result.is_error, text
        value = result.structured_content["result"]
        assert value["people"] == ["Grace"], value
        assert "7" in json.dumps(value["sum"]), value
        # Console lines are in the text only; the structured copy follows the output schema,
        # which the SDK checked.
        assert "\n\n--- console ---\nentities: 1" in text, text
        assert "logs" not in result.structured_content, result.structured_content

        found = await client.call_tool("search_tools", {"query": "add two numbers"})
        assert not found.is_error, found
        first = found.structured_content["results"][0]["name"]
        assert first == "everything.get_sum", first

        failing = await client.call_tool("execute_code", {"code": "while (true) {}", "language": "javascript"})
        assert failing.is_error, failing
        assert failing.structured_content["error"]["kind"] == "Timeout", failing.structured_content
    print("sdk_client: ok")


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2]))
    except AssertionError as failure:
        print(f"sdk_client: check failed: {failure!r}", file=sys.stderr)
        sys.exit(1)
