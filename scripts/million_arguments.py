#!/usr/bin/env python3
"""Times the answer to an `execute_code` request with a million arguments toolweave does not read.

Usage: scripts/million_arguments.py TOOLWEAVE CONFIG [COUNT]

Starts `TOOLWEAVE serve --config CONFIG` over stdio, initializes, then sends the same request
three times (COUNT arguments `k0`, `k1`, ... each `0`, besides `code`, as compact JSON) and prints
the request's size, the answer's size and the time from the request's first byte to the answer.
With PREFIX set (e.g. `perf record -g --`), the gateway runs under that command.
"""

import json
import os
import subprocess
import sys
import time


def main() -> None:
    exe, config = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    gateway = subprocess.Popen(
        os.environ.get("PREFIX", "").split() + [exe, "serve", "--config", config],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )

    def send(message: dict) -> None:
        gateway.stdin.write((json.dumps(message) + "\n").encode())
        gateway.stdin.flush()

    send(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "million", "version": "1"},
            },
        }
    )
    gateway.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    arguments = {"code": "return 1", "language": "javascript"}
    for index in range(count):
        arguments[f"k{index}"] = 0
    for run in range(3):
        request = {
            "jsonrpc": "2.0",
            "id": run + 1,
            "method": "tools/call",
            "params": {"name": "execute_code", "arguments": arguments},
        }
        body = (json.dumps(request, separators=(",", ":")) + "\n").encode()
        started = time.perf_counter()
        gateway.stdin.write(body)
        gateway.stdin.flush()
        answer = gateway.stdout.readline()
        took = time.perf_counter() - started
        print(f"{len(body) / 1e6:.1f} MB request, {len(answer)} B answer, {took:.3f} s", flush=True)
        if run == 0:
            print(answer[:300].decode(errors="replace"), flush=True)
    gateway.stdin.close()
    gateway.wait()


if __name__ == "__main__":
    main()
