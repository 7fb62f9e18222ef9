#!/usr/bin/env python3
"""The rest of MCP 2026-07-28 on the face toolweave serves, through the official Python SDK client in
one of its modes: its default (`Client(...)`, MCP 2026-07-28) or `mode="legacy"` (MCP 2025-11-25),
over stdio and over streamable HTTP.

Usage: sdk_face.py TOOLWEAVE_BINARY CONFIG META_FILE MODE
CONFIG fronts the fixture server as "fixture", started with `--record-meta META_FILE`; toolweave is
served with `--direct "fixture.*"`, so its tool list follows the catalog. MODE is "default" or
"legacy".
Checks, over each transport:
- tool list changes: a tool the fixture registers from code reaches the client as a
  `notifications/tools/list_changed` on a `subscriptions/listen` stream (default mode; the stream
  is acknowledged with the tool list changes only), or on the session (legacy mode);
- `tools/list`: its `ttlMs` (a minute, for a list that follows the catalog) and `cacheScope`
  (public: no identities are set) in the default mode; in both, the tools listed directly come in
  the order of their names, whatever order the fixture lists them in;
- log messages of an execution: at or above the request's level only (`log_level` on the client
  in the default mode, `logging/setLevel` in legacy mode); none at all for a 2026-07-28 request
  that names no level;
- W3C trace context in the request's `_meta` reaches the upstream server's request.
Exits 0 and prints "sdk_face: ok" when every check passes; prints the failure and exits 1 otherwise.
"""
import json
import pathlib

import anyio
from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.subscriptions import ToolsListChanged
from session import run_script, serving_http, text_of

FLAGS = ["--direct", "fixture.*"]

LOGS = """
console.debug("a debug line");
console.log("an info line");
console.warn("a warning line");
console.error("an error line");
return "logged";
"""

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
TRACESTATE = "vendor=opaque"


def client(target, mode: str, **options) -> Client:
    options.setdefault("read_timeout_seconds", 60)
    if mode == "legacy":
        options["mode"] = "legacy"
    return Client(target, **options)


async def value(connected: Client, code: str, **options):
    result = await connected.call_tool("execute_code", {"code": code}, **options)
    assert not result.is_error, text_of(result)
    return result.structured_content["result"]


def direct_names(listed: types.ListToolsResult) -> list[str]:
    return [tool.name for tool in listed.tools if tool.name.startswith("fixture__")]


async def check_list(target, mode: str, suffix: str) -> None:
    """The list and its changes: registered tools are told and listed in order."""
    changes: list[str] = []

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append("tools/list_changed")

    async with client(target, mode, message_handler=on_message) as connected:
        listed = await connected.list_tools()
        names = direct_names(listed)
        assert names and names == sorted(names), names
        if mode == "default":
            assert listed.ttl_ms == 60_000, (listed.ttl_ms, listed.cache_scope)
            assert listed.cache_scope == "public", listed.cache_scope
            assert connected.server_capabilities.tools.list_changed, connected.server_capabilities
            async with connected.listen(tools_list_changed=True, prompts_list_changed=True) as subscription:
                # Only what toolweave's list does: its tools change, it has no prompts.
                assert subscription.honored.tools_list_changed, subscription.honored
                assert not subscription.honored.prompts_list_changed, subscription.honored
                await value(connected, f'return await tools.fixture.register({{ name: "zeta{suffix}" }})')
                with anyio.fail_after(15):
                    event = await subscription.__anext__()
                assert isinstance(event, ToolsListChanged), event
        else:
            await value(connected, f'return await tools.fixture.register({{ name: "zeta{suffix}" }})')
            with anyio.fail_after(15):
                while not changes:
                    await anyio.sleep(0.05)
        await value(connected, f'return await tools.fixture.register({{ name: "alpha{suffix}" }})')
        with anyio.fail_after(15):
            while True:
                names = direct_names(await connected.list_tools(cache_mode="refresh"))
                if f"fixture__alpha{suffix}" in names:
                    break
                await anyio.sleep(0.05)
        assert f"fixture__zeta{suffix}" in names, names
        assert names == sorted(names), names


async def check_logs(target, mode: str) -> None:
    """Log messages of an execution: at or above the level asked for, and none unasked."""
    received: list[tuple[str, str]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append((params.level, str(params.data)))

    options = {"logging_callback": on_log}
    if mode == "default":
        options["log_level"] = "warning"
    async with client(target, mode, **options) as connected:
        if mode == "legacy":
            await connected.set_logging_level("warning")
        assert await value(connected, LOGS) == "logged"
        lines = [line for _, line in received]
        assert received == [("warning", "a warning line"), ("error", "an error line")], received
        received.clear()
        if mode == "default":
            # The request's own level wins over the client's.
            meta = {"io.modelcontextprotocol/logLevel": "debug"}
            assert await value(connected, LOGS, meta=meta) == "logged"
            lines = [line for _, line in received]
            assert lines == ["a debug line", "an info line", "a warning line", "an error line"], received
    if mode == "default":
        received.clear()
        async with client(target, mode, logging_callback=on_log) as unasked:
            assert await value(unasked, LOGS) == "logged"
        assert received == [], received


async def check_trace(target, mode: str, meta_file: pathlib.Path, suffix: str) -> None:
    """The caller's trace context goes on to the upstream server's request."""
    async with client(target, mode) as connected:
        meta = {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
        message = f"traced{suffix}"
        assert await value(connected, f'return await tools.fixture.echo({{ message: "{message}" }})', meta=meta) == message
    calls = [json.loads(line) for line in meta_file.read_text().splitlines()]
    traced = [call["meta"] for call in calls if call["tool"] == "echo"]
    assert traced, calls
    last = traced[-1]
    assert last.get("traceparent") == TRACEPARENT, last
    assert last.get("tracestate") == TRACESTATE, last


async def check(target, mode: str, transport: str, meta_file: pathlib.Path) -> None:
    suffix = f"_{transport}"
    await check_list(target, mode, suffix)
    await check_logs(target, mode)
    await check_trace(target, mode, meta_file, suffix)


async def main(binary: str, config: str, meta_file: str, mode: str) -> None:
    assert mode in ("default", "legacy"), mode
    meta = pathlib.Path(meta_file)
    await check(StdioServerParameters(command=binary, args=["serve", "--config", config, *FLAGS]), mode, "stdio", meta)
    with serving_http(binary, config, *FLAGS) as url:
        await check(url, mode, "http", meta)


if __name__ == "__main__":
    run_script("sdk_face", main)
