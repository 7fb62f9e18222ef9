#!/usr/bin/env python3
"""What an execution adds to the upstream call it makes, over raw stdio, executions paced.

    python3 scripts/paced_overhead.py BINARY FIXTURE CONFIG LANGUAGE [RUNS [PAUSE_MS]] [-- SERVE_ARGS...]

Starts `BINARY serve --config CONFIG SERVE_ARGS...` and, beside it, the fixture server FIXTURE
on its own. Then, three times: RUNS calls of the fixture's `add` made directly, and RUNS
executions making that same call through toolweave, each sent PAUSE_MS (default 5) after the
last answer. Prints the median of each series and the difference. The client is this script
writing JSON-RPC lines, so both series carry the same client cost (no SDK, no async runtime).

BINARY may be a wrapper, such as one that runs toolweave under `taskset -c 1`: that is how the
effect of keeping an execution's hand-offs on one core was measured (docs/benchmarks.md).

With ECHO set, both series call the fixture's `echo` with that message instead of `add`, and the
execution returns what it answered: what redaction costs an answer with something to replace
(`ECHO="write to ann.lee@example.org" ... -- --redact email`) was measured so.
"""
import os
import json
import subprocess
import sys
import time

args = sys.argv[1:]
serve_args = []
if "--" in args:
    serve_args = args[args.index("--") + 1:]
    args = args[:args.index("--")]
binary, fixture, config, language = args[:4]
runs = int(args[4]) if len(args) > 4 else 300
pause = (float(args[5]) if len(args) > 5 else 5.0) / 1000
echo = os.environ.get("ECHO")
tool, arguments = ("echo", {"message": echo}) if echo is not None else ("add", {"a": 2, "b": 5})
code = {
    "javascript": f"return await tools.fixture.{tool}({json.dumps(arguments)})",
    "python": f"await tools.fixture.{tool}(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in arguments.items()) + ")",
}[language]


def start(command):
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    send(process, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "paced_overhead", "version": "1"}}})
    answer(process, 0)
    send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return process


def send(process, message):
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def answer(process, id):
    while True:
        message = json.loads(process.stdout.readline())
        if message.get("id") == id:
            return message


def series(process, tool, arguments, first_id):
    samples = []
    for n in range(runs):
        time.sleep(pause)
        started = time.perf_counter_ns()
        send(process, {"jsonrpc": "2.0", "id": first_id + n, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}})
        message = answer(process, first_id + n)
        samples.append(time.perf_counter_ns() - started)
        assert not message["result"].get("isError"), message
    samples.sort()
    return samples[len(samples) // 2] / 1e6


gateway = start([binary, "serve", "--config", config, *serve_args])
direct = start([fixture, "--name", "direct"])
time.sleep(0.3)  # the gateway's upstream server and workers started
execution = {"code": code, "language": language}
series(gateway, "execute_code", execution, 1)  # warm-up
for round in range(3):
    d = series(direct, tool, arguments, 10_000 * (round + 1))
    e = series(gateway, "execute_code", execution, 10_000 * (round + 1))
    print(f"direct {d:.3f} ms   execution {e:.3f} ms   (+{e - d:.3f})", flush=True)
gateway.stdin.close()
direct.stdin.close()
gateway.wait()
direct.wait()
