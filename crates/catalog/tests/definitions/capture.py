"""Captures real servers' tool definitions and instructions for the definitions corpus.

Speaks MCP over stdio (initialize, tools/list with its pages) to each server named on the command
line as NAME=COMMAND (the command split at spaces) and prints one JSON object per server:
{"server", "instructions", "tools"}. The servers are installed outside the repository, e.g.
`npm install --prefix /tmp/servers @modelcontextprotocol/server-github` or
`python3 -m venv /tmp/servers/venv && /tmp/servers/venv/bin/pip install mcp-server-time`.

    python3 capture.py time="/tmp/servers/venv/bin/mcp-server-time" > captured.json
"""

import json
import subprocess
import sys


def request(process, message):
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its output")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            continue
        if answer.get("id") == message["id"]:
            if "error" in answer:
                raise RuntimeError(answer["error"])
            return answer["result"]


def capture(name, command):
    process = subprocess.Popen(
        command.split(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        initialized = request(
            process,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "capture", "version": "1"},
                },
            },
        )
        request(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor, next_id = [], None, 2
        while True:
            params = {"cursor": cursor} if cursor else {}
            page = request(
                process,
                {"jsonrpc": "2.0", "id": next_id, "method": "tools/list", "params": params},
            )
            next_id += 1
            tools.extend(page.get("tools", []))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return {
            "server": name,
            "instructions": initialized.get("instructions"),
            "tools": tools,
        }
    finally:
        process.kill()
        process.wait()


def main():
    captured = []
    for argument in sys.argv[1:]:
        name, command = argument.split("=", 1)
        captured.append(capture(name, command))
        print(f"{name}: {len(captured[-1]['tools'])} tools", file=sys.stderr)
    json.dump(captured, sys.stdout, indent=1)


main()
