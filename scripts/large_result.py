#!/usr/bin/env python3
"""How long a large tool result takes to reach guest code, over raw stdio.

    python3 scripts/large_result.py BINARY FIXTURE LANGUAGE MEGABYTES [RUNS] [-- SERVE_ARGS...]

Starts `BINARY serve` with the fixture server FIXTURE as its only upstream, then RUNS times
(default 5) runs a program in LANGUAGE (javascript or python) that asks the fixture's `large`
tool for MEGABYTES million bytes of text and returns its length. Prints how long each execution
took as the client saw it, and what it answered (a length, or the error's first line). Pass
`--memory-mb` in SERVE_ARGS for results the default memory limit cannot hold, and
`--isolation in-process` to compare with engine threads.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]
serve_args = []
if "--" in args:
    serve_args = args[args.index("--") + 1:]
    args = args[:args.index("--")]
binary, fixture, language, megabytes = args[:4]
runs = int(args[4]) if len(args) > 4 else 5
size = int(float(megabytes) * 1_000_000)
code = {
    "javascript": f"const text = await tools.fixture.large({{ bytes: {size} }}); text.length",
    "python": f"text = await tools.fixture.large(bytes={size})\nlen(text)",
}[language]


def send(process, message):
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def answer(process, id):
    while True:
        message = json.loads(process.stdout.readline())
        if message.get("id") == id:
            return message


with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as config:
    json.dump({"mcpServers": {"fixture": {"command": fixture}}}, config)
gateway = subprocess.Popen([binary, "serve", "--config", config.name, *serve_args],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
send(gateway, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "large_result", "version": "1"}}})
answer(gateway, 0)
send(gateway, {"jsonrpc": "2.0", "method": "notifications/initialized"})
time.sleep(0.5)  # the upstream server and the workers started
for n in range(1, runs + 1):
    started = time.perf_counter()
    send(gateway, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": code, "language": language}}})
    result = answer(gateway, n)["result"]
    took = time.perf_counter() - started
    text = result["content"][0]["text"].splitlines()[0][:160]
    print(f"{megabytes} MB, {language}: {took:.3f} s  {text}", flush=True)
gateway.stdin.close()
gateway.wait(timeout=10)
os.unlink(config.name)
