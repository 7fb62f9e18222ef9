#!/usr/bin/env python3
"""Drives `toolweave serve` with the official MCP Python SDK as the client, over stdio and over
streamable HTTP, with worker isolation: what a session keeps across its executions.

Usage: sdk_session_state.py TOOLWEAVE_BINARY CONFIG   (CONFIG fronts the fixture server "fixture")
Checks the store (a value set in one execution is read in the next, in both languages; its bound
is named in the error), result handles (a 5 MB result becomes a handle and is read back exactly in
pieces; paths, handle(value), unknown and expired handles), allowedTools and timeoutMs (they
narrow, never widen), that two HTTP sessions never see each other's store or handles, and that
a request without a session (protocol 2026-07-28) keeps its store through the answer's session
handle.
Exits 0 and prints "sdk_session_state: ok" when every check passes; prints the failure and exits 1
otherwise.
"""
import asyncio
import json

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from session import run_script, serving_http, text_of

# The answer limit the gateway runs with here: 1 MiB, so a 5 MB result reads back in six pieces.
MAX_RESULT_BYTES = 1024 * 1024
PIECE = 1_000_000
# A string of some 5.6 MB whose every character Python can check.
COUNT = 800_000
BIG_JS = f"""
let parts = [];
for (let i = 0; i < {COUNT}; i++) parts.push(String(i));
return parts.join(",");
"""
BIG = ",".join(str(i) for i in range(COUNT))


async def run(client, code: str, **arguments):
    result = await client.call_tool("execute_code", {"code": code, **arguments})
    return result, text_of(result)


async def value(client, code: str, **arguments):
    result, text = await run(client, code, **arguments)
    assert not result.is_error, text
    return result.structured_content["result"]


async def failure(client, code: str, **arguments) -> str:
    """The message of an execution that must fail (a guest error or a limit)."""
    result, text = await run(client, code, **arguments)
    assert result.is_error, text
    return text


async def store_checks(client) -> None:
    keys = await value(client, 'await store.set("plan", { step: 2, ids: [1, 2, 3] }); return await store.keys()')
    assert keys == ["plan"], keys
    kept = await value(client, 'return await store.get("plan")')
    assert kept == {"step": 2, "ids": [1, 2, 3]}, kept
    # Python sees the same store, with the same names.
    kept = await value(client, 'p = await store.get("plan")\nawait store.set("from_python", [p["step"], "two"])\np', language="python")
    assert kept == {"step": 2, "ids": [1, 2, 3]}, kept
    both = await value(client, 'return [await store.get("from_python"), await store.get("missing"), await store.delete("plan"), await store.keys()]')
    assert both == [[2, "two"], None, True, ["from_python"]], both
    # Past the store's bound, the error names the flag that raises it.
    message = await failure(client, 'await store.set("big", "x".repeat(5 * 1024 * 1024))')
    assert "--max-store-bytes 4194304" in message, message


async def handle_checks(client) -> None:
    result, text = await run(client, BIG_JS)
    assert not result.is_error, text
    described = result.structured_content["result"]
    assert described["bytes"] == len(BIG) + 2, described
    assert described["shape"] == f"string({len(BIG)})", described
    assert described["preview"].startswith('"0,1,2,3,'), described
    handle = described["handle"]
    warning = " ".join(result.structured_content["warnings"])
    assert f'results.get("{handle}"' in warning and "--max-result-bytes 1048576" in warning, warning

    pieces = []
    for offset in range(0, len(BIG), PIECE):
        piece = await value(client, f'return await results.get("{handle}", {{ offset: {offset}, limit: {PIECE} }})')
        pieces.append(piece)
    assert len(pieces) == 6, len(pieces)
    assert "".join(pieces) == BIG, "the pieces differ from the value"
    # The description the answer gave serves as the handle, and Python reads pieces too.
    tail = await value(client, f'return await results.get({json.dumps(described)}, {{ offset: {len(BIG) - 6} }})')
    assert tail == BIG[-6:], tail
    head = await value(client, f'await results.get("{handle}", offset=0, limit=12)', language="python")
    assert head == BIG[:12], head

    # A structured result: its shape, and a path into it.
    result, text = await run(client, 'return { items: Array.from({ length: 30000 }, (_, i) => ({ id: i, name: "n" + i, pad: "p".repeat(30) })) }')
    assert not result.is_error, text
    described = result.structured_content["result"]
    assert described["shape"] == '{ "items": Array(30000) of { "id": number, "name": string(2), "pad": string(30) } }', described
    handle = described["handle"]
    name = await value(client, f'return await results.get("{handle}", {{ path: "items[29999].name" }})')
    assert name == "n29999", name
    items = await value(client, f'return await results.get("{handle}", {{ path: "items", offset: 10, limit: 2 }})')
    assert [item["id"] for item in items] == [10, 11], items
    message = await failure(client, f'return await results.get("{handle}", {{ path: "items.0.title" }})')
    assert "an object with keys id, name, pad" in message, message

    # handle(value) keeps a small value on purpose.
    kept = await value(client, 'const h = await handle({ a: 1 }); return h.handle')
    assert await value(client, f'return await results.get("{kept}")') == {"a": 1}
    message = await failure(client, 'return await results.get("h999-zzzz")')
    assert 'no result handle "h999-zzzz" in this session' in message, message


async def narrowing_checks(client) -> None:
    # allowedTools keeps a call out...
    summed = await value(client, "return await tools.fixture.add({ a: 2, b: 3 })", allowedTools=["fixture.add"])
    assert summed == "5", summed
    message = await failure(client, 'return await tools.fixture.echo({ message: "hi" })', allowedTools=["fixture.add"])
    assert "allowedTools (fixture.add) leaves out fixture.echo" in message, message
    # ...and cannot let in what the policy denies.
    result, text = await run(client, 'return await tools.fixture.remove({ name: "x" })', allowedTools=["fixture.*"])
    assert result.is_error, text
    assert "toolweave's policy keeps it from code" in text, text
    warnings = " ".join(result.structured_content.get("warnings", []))
    assert 'allowedTools "fixture.*" matches fixture.remove, which toolweave\'s policy keeps from code' in warnings, warnings

    # timeoutMs narrows the deadline, and a longer one is cut to the gateway's.
    result, text = await run(client, "while (true) {}", language="javascript", timeoutMs=300)
    assert result.is_error, text
    assert result.structured_content["error"]["kind"] == "Timeout", result.structured_content
    assert "timeoutMs asked for" in text, text
    result, text = await run(client, "return 1", timeoutMs=10_000_000)
    assert not result.is_error, text
    warnings = " ".join(result.structured_content["warnings"])
    assert "timeoutMs 10000000 is longer than this gateway allows" in warnings and "20000 ms" in warnings, warnings


async def over_stdio(binary: str, config: str) -> None:
    params = StdioServerParameters(
        command=binary,
        args=[
            "serve", "--config", config, "--isolation", "worker", "--deny", "fixture.remove",
            "--max-result-bytes", str(MAX_RESULT_BYTES), "--memory-mb", "256", "--timeout-ms", "20000",
        ],
    )
    async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
        await store_checks(client)
        await handle_checks(client)
        await narrowing_checks(client)


async def over_http(binary: str, config: str) -> None:
    with serving_http(binary, config, "--isolation", "worker", "--handle-ttl-ms", "1500") as url:
        async with Client(url, mode="legacy", read_timeout_seconds=60) as first, Client(url, mode="legacy", read_timeout_seconds=60) as second:
            await value(first, 'await store.set("secret", "first session"); return null')
            assert await value(second, 'return [await store.keys(), await store.get("secret")]') == [[], None]
            await value(second, 'await store.set("secret", "second session"); return null')
            assert await value(first, 'return await store.get("secret")') == "first session"
            assert await value(second, 'return await store.get("secret")') == "second session"

            kept = await value(first, 'return (await handle([1, 2, 3])).handle')
            assert await value(first, f'return await results.get("{kept}")') == [1, 2, 3]
            message = await failure(second, f'return await results.get("{kept}")')
            assert f'no result handle "{kept}" in this session' in message, message

            # Its time up, a handle is gone, and the error says why and which flag keeps it.
            await asyncio.sleep(2.0)
            message = await failure(first, f'return await results.get("{kept}")')
            assert f'result handle "{kept}" has expired' in message and "--handle-ttl-ms 1500" in message, message

        # Protocol 2026-07-28 has no sessions: each answer carries a session handle, and a request
        # without one starts a session of its own (sdk_handles.py checks the handle at length).
        async with Client(url, read_timeout_seconds=60) as alone:
            assert alone.protocol_version == "2026-07-28", alone.protocol_version
            result, text = await run(alone, 'await store.set("a", 1); return await store.get("a")')
            assert not result.is_error and result.structured_content["result"] == 1, text
            session = result.structured_content["session"]
            assert await value(alone, 'return await store.get("a")') is None
            assert await value(alone, 'return await store.get("a")', session=session) == 1


async def main(binary: str, config: str) -> None:
    await over_stdio(binary, config)
    await over_http(binary, config)


if __name__ == "__main__":
    run_script("sdk_session_state", main)
