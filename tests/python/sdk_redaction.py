#!/usr/bin/env python3
"""Redaction seen by the official MCP Python SDK, over stdio and over streamable HTTP, in one of its
modes (its default, MCP 2026-07-28, or `mode="legacy"`).

Usage: sdk_redaction.py TOOLWEAVE_BINARY CONFIG SETTINGS RECORDED ADDRESS MODE
CONFIG fronts the fixture server as "fixture", whose `CONTACT` variable is ADDRESS and which adds
the arguments of every call to RECORDED (`--record-meta`); SETTINGS redacts email.
Checks: code reads the address from one tool and passes it to another; the answer the client gets
holds only its token, and the second tool received the address; the token written into the next
program (with the answer's session handle, where the protocol has no session) reaches the tool as
the address, and the answer carries the same token again.
Exits 0 and prints "sdk_redaction: ok" when every check passes; prints the failure and exits 1
otherwise.
"""
import json
import pathlib

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from session import run_script, serving_http, text_of

MOVE = """
const to = await tools.fixture.env({ name: "CONTACT" });
await tools.fixture.echo({ message: `to ${to}` });
return { to, length: to.length };
"""


def echoed(recorded: pathlib.Path) -> str:
    """What the fixture's last `echo` call received."""
    calls = [json.loads(line) for line in recorded.read_text().splitlines()]
    return [call for call in calls if call["tool"] == "echo"][-1]["arguments"]["message"]


async def check(client, recorded: pathlib.Path, address: str) -> None:
    result = await client.call_tool("execute_code", {"code": MOVE})
    text = text_of(result)
    assert not result.is_error, text
    assert result.structured_content["result"] == {"to": "<email_1>", "length": len(address)}, text
    assert address not in text and address not in json.dumps(result.structured_content), text
    assert echoed(recorded) == f"to {address}", echoed(recorded)
    # Without a protocol session the session is the answer's handle: passed back, it keeps the
    # tokens.
    session = result.structured_content.get("session")
    arguments = {"code": 'return await tools.fixture.echo({ message: "again <email_1>" })'}
    if session is not None:
        arguments["session"] = session
    result = await client.call_tool("execute_code", arguments)
    text = text_of(result)
    assert not result.is_error, text
    assert result.structured_content["result"] == "again <email_1>", text
    assert echoed(recorded) == f"again {address}", echoed(recorded)


async def main(binary: str, config: str, settings: str, recorded: str, address: str, mode: str) -> None:
    recorded_file = pathlib.Path(recorded)
    legacy = {"mode": "legacy"} if mode == "legacy" else {}
    params = StdioServerParameters(command=binary, args=["serve", "--config", config, "--settings", settings])
    async with Client(params, read_timeout_seconds=60, **legacy) as client:
        await check(client, recorded_file, address)
    with serving_http(binary, config, "--settings", settings) as url:
        async with Client(url, read_timeout_seconds=60, **legacy) as client:
            await check(client, recorded_file, address)


if __name__ == "__main__":
    run_script("sdk_redaction", main)
