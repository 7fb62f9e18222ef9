"""What the SDK test scripts share: a gateway served over streamable HTTP, answer text, and how a
script reports.

The scripts run as `python tests/python/<script>.py`, so this folder is first on `sys.path`.
"""
import asyncio
import contextlib
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator

LISTENING = "toolweave: serving MCP at http://"


def text_of(result) -> str:
    """The text blocks of a tool result, one per line."""
    return "\n".join(getattr(item, "text", "") for item in result.content)


@contextlib.contextmanager
def serving_http(binary: str, config: str, *flags: str) -> Iterator[str]:
    """`toolweave serve --http 127.0.0.1:0 --config CONFIG FLAGS...` while the block runs; its MCP URL."""
    process = subprocess.Popen(
        [binary, "serve", "--http", "127.0.0.1:0", "--config", config, *flags],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = None
        for line in process.stderr:
            if line.startswith(LISTENING):
                url = f"http://{line[len(LISTENING):].split('/')[0]}/mcp"
                break
        if url is None:
            raise AssertionError(f"toolweave serve --http did not start (exit {process.wait()})")
        # Keep reading its log, so that it never waits for the pipe.
        threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_script(name: str, main: Callable[..., Awaitable[None]]) -> None:
    """Runs `main(*arguments)`; prints `NAME: ok` when it returns, or the failed check and exits 1."""
    try:
        asyncio.run(main(*sys.argv[1:]))
    except AssertionError as failure:
        print(f"{name}: check failed: {failure!r}", file=sys.stderr)
        sys.exit(1)
    print(f"{name}: ok")
