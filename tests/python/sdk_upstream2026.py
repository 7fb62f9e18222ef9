#!/usr/bin/env python3
"""A FastMCP 4 server speaking MCP 2026-07-28 as an upstream, through toolweave, to the official
MCP Python SDK client in one of its modes.

Usage: sdk_upstream2026.py TOOLWEAVE_BINARY CONFIG MODE
CONFIG fronts `fastmcp_upstream.py` as "fastmcp" over stdio and as "fastmcp_http" over streamable
HTTP, with a timeout of 1500 ms for `crunch_slowly`. MODE is "default" (MCP 2026-07-28) or
"legacy" (2025-11-25).
Checks, with toolweave over stdio and over streamable HTTP: guest code calls `confirm_order` on each
upstream, whose server asks the person with an `InputRequiredResult`; the question reaches this
client's elicitation callback once per call (as a round of execute_code in the default mode, as
a request in the legacy mode) and the tool's answer carries what the person said. `crunch`, a
task at the server, answers code with the task's result; `crunch_slowly` fails at its timeout,
saying so.
Exits 0 and prints "sdk_upstream2026: ok" when every check passes; prints the failure and exits 1
otherwise.
"""
import json

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from session import run_script, serving_http, text_of

ORDER = """
return [
  await tools.fastmcp.confirm_order({ item: "tea" }),
  await tools.fastmcp_http.confirm_order({ item: "cake" }),
];
"""

CRUNCH = """
return [
  await tools.fastmcp.crunch({ numbers: [1, 2, 3] }),
  await tools.fastmcp_http.crunch({ numbers: [4, 5] }),
];
"""

SLOW = """
try { return await tools.fastmcp.crunch_slowly({ seconds: 20 }) } catch (e) { return String(e) }
"""


class Person:
    """The person at the client: answers every question, and keeps what was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, context, params) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"note": f"from the person, {len(self.asked)}"})


def client(target, mode: str, person: Person) -> Client:
    options = {"read_timeout_seconds": 60, "elicitation_callback": person.elicit}
    if mode == "legacy":
        options["mode"] = "legacy"
    return Client(target, **options)


async def execute(connected: Client, code: str):
    result = await connected.call_tool("execute_code", {"code": code})
    assert not result.is_error, text_of(result)
    return result.structured_content["result"]


async def check(target, mode: str, transport: str) -> None:
    person = Person()
    async with client(target, mode, person) as connected:
        ordered = json.dumps(await execute(connected, ORDER))
        assert person.asked == ["[fastmcp] Order tea?", "[fastmcp_http] Order cake?"], (transport, person.asked)
        assert "ordered: tea, note: from the person, 1" in ordered, (transport, ordered)
        assert "ordered: cake, note: from the person, 2" in ordered, (transport, ordered)

        crunched = json.dumps(await execute(connected, CRUNCH))
        assert "sum: 6" in crunched and "sum: 9" in crunched, (transport, crunched)

        slow = json.dumps(await execute(connected, SLOW))
        assert "1500 ms" in slow, (transport, slow)
        assert len(person.asked) == 2, (transport, person.asked)


async def main(binary: str, config: str, mode: str) -> None:
    await check(StdioServerParameters(command=binary, args=["serve", "--config", config]), mode, "stdio")
    with serving_http(binary, config) as url:
        await check(url, mode, "http")


if __name__ == "__main__":
    run_script("sdk_upstream2026", main)
