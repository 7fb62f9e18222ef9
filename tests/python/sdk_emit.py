#!/usr/bin/env python3
"""Drives `toolweave serve` with the official MCP Python SDK as the client, over stdio and over
streamable HTTP, with worker isolation: pictures and audio from code, and live progress and logs.

Usage: sdk_emit.py TOOLWEAVE_BINARY CONFIG   (CONFIG fronts the fixture server "fixture")
Checks that an image a tool returns reaches the client as an ImageContent block with the same
bytes, that emit() of an image and an audio block arrive as ImageContent and AudioContent after
the answer's text (in JavaScript and Python), that the block past --max-emitted-blocks gets an
error naming the flag, that progress(i, n) of a 3-second execution reaches the progress callback
while it runs (timestamps well before the answer, values rising, the last one n of n), and that
console lines reach the logging callback while it runs when no progress token was given.
Exits 0 and prints "sdk_emit: ok" when every check passes; prints the failure and exits 1
otherwise.
"""
import base64
import time

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from session import run_script, serving_http, text_of

# The fixture's `image` tool answers with this 1x1 PNG.
TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
MAX_BLOCKS = 3
STEPS = 30
# About 3 seconds: STEPS turns of 100 ms.
PROGRESS_JS = f"""
for (let i = 0; i < {STEPS}; i++) {{
  await new Promise((resolve) => setTimeout(resolve, 100));
  progress(i + 1, {STEPS}, "step " + (i + 1));
}}
return "done";
"""
CONSOLE_JS = """
console.log("first line");
await new Promise((resolve) => setTimeout(resolve, 1000));
console.debug("below the session's level");
console.warn("second line");
await new Promise((resolve) => setTimeout(resolve, 1000));
return "done";
"""


async def blocks_checks(client) -> None:
    # An image a tool returns is a block of the answer, with the fixture's bytes.
    result = await client.call_tool("execute_code", {"code": "return await tools.fixture.image({})"})
    assert not result.is_error, text_of(result)
    assert isinstance(result.content[0], types.TextContent), result.content
    images = result.content[1:]
    assert len(images) == 1 and isinstance(images[0], types.ImageContent), result.content
    assert images[0].mime_type == "image/png", images[0]
    assert base64.b64decode(images[0].data) == base64.b64decode(TINY_PNG), images[0].data
    assert result.structured_content["result"] == [{"type": "image", "mimeType": "image/png", "bytes": 68}], result.structured_content

    # emit() of an image and an audio block, in both languages, in order, after the text.
    for language, code in [
        ("typescript", f'await emit({{type: "image", data: "{TINY_PNG}", mimeType: "image/png"}});\n'
                       f'await emit({{type: "audio", data: "{WAV}", mimeType: "audio/wav"}});\nreturn 1'),
        ("python", f'await emit({{"type": "image", "data": "{TINY_PNG}", "mimeType": "image/png"}})\n'
                   f'await emit({{"type": "audio", "data": "{WAV}", "mimeType": "audio/wav"}})\n1'),
    ]:
        result = await client.call_tool("execute_code", {"code": code, "language": language})
        assert not result.is_error, text_of(result)
        kinds = [type(item).__name__ for item in result.content]
        assert kinds == ["TextContent", "ImageContent", "AudioContent"], (language, kinds)
        assert result.content[1].data == TINY_PNG and result.content[1].mime_type == "image/png"
        assert result.content[2].data == WAV and result.content[2].mime_type == "audio/wav"

    # The block past the limit is refused with the flag named; the code can catch it.
    code = (
        "let sent = 0;\n"
        f"try {{ for (let i = 0; i < {MAX_BLOCKS + 1}; i++) {{ await emit({{type: \"image\", data: \"{TINY_PNG}\", mimeType: \"image/png\"}}); sent++; }} }}\n"
        "catch (error) { return [sent, error.message]; }"
    )
    result = await client.call_tool("execute_code", {"code": code})
    assert not result.is_error, text_of(result)
    sent, message = result.structured_content["result"]
    assert sent == MAX_BLOCKS, result.structured_content
    assert f"--max-emitted-blocks {MAX_BLOCKS}" in message, message
    assert len(result.content) == 1 + MAX_BLOCKS, result.content


async def progress_checks(client) -> None:
    seen = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((time.monotonic(), progress, total, message))

    started = time.monotonic()
    result = await client.call_tool("execute_code", {"code": PROGRESS_JS}, progress_callback=on_progress)
    answered = time.monotonic()
    assert not result.is_error, text_of(result)
    assert answered - started >= 2.5, answered - started
    assert len(seen) >= 10, seen
    values = [progress for _, progress, _, _ in seen]
    assert values == sorted(set(values)), values
    assert seen[-1][1:] == (STEPS, STEPS, f"step {STEPS}"), seen[-1]
    # They came while the code ran: the first more than two seconds before the answer.
    assert answered - seen[0][0] > 2.0, (answered - seen[0][0], seen[0])
    assert all(at <= answered for at, _, _, _ in seen), seen


async def console_checks(client, logged: list) -> None:
    logged.clear()
    started = time.monotonic()
    result = await client.call_tool("execute_code", {"code": CONSOLE_JS})
    answered = time.monotonic()
    assert not result.is_error, text_of(result)
    lines = [(level, data, logger) for _, level, data, logger in logged]
    assert lines == [("info", "first line", "toolweave/code"), ("warning", "second line", "toolweave/code")], lines
    # The first line arrived while the code waited, not with the answer.
    assert answered - logged[0][0] > 1.5, (answered - started, logged)
    # The answer still carries every line.
    assert "first line" in text_of(result) and "below the session's level" in text_of(result), text_of(result)


def logging_callback(logged: list):
    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append((time.monotonic(), params.level, params.data, params.logger))

    return on_log


async def over_stdio(binary: str, config: str) -> None:
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--config", config, "--isolation", "worker", "--max-emitted-blocks", str(MAX_BLOCKS)],
    )
    logged = []
    async with Client(params, mode="legacy", read_timeout_seconds=60, logging_callback=logging_callback(logged)) as client:
        await blocks_checks(client)
        await progress_checks(client)
        await console_checks(client, logged)


async def over_http(binary: str, config: str) -> None:
    with serving_http(binary, config, "--isolation", "worker", "--max-emitted-blocks", str(MAX_BLOCKS)) as url:
        logged = []
        async with Client(url, mode="legacy", read_timeout_seconds=60, logging_callback=logging_callback(logged)) as client:
            await blocks_checks(client)
            await progress_checks(client)
            await console_checks(client, logged)


async def main(binary: str, config: str) -> None:
    await over_stdio(binary, config)
    await over_http(binary, config)


if __name__ == "__main__":
    run_script("sdk_emit", main)
