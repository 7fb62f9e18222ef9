#!/usr/bin/env python3
"""What a large catalog costs the gateway: its memory with and without pinning, and an execution.

    python3 scripts/catalog_cost.py memory FIXTURE BINARY [BINARY...] [-- SERVE_ARGS...]
    python3 scripts/catalog_cost.py execution FIXTURE BINARY [BINARY...] [-- SERVE_ARGS...]

`memory`: for each binary, pinning on and off, a gateway in front of one fixture server of
10,000 synthetic tools (`toolweave-fixture --tools 10000`) with a configuration folder of its
own: the first search, 20 executions making one call, then the gateway's VmRSS and VmHWM (peak).
With pinning on, twice: the first start (every tool pinned, the pins written), then a restart
on the same folder (the pins read and compared). Three rounds, the binaries in turn.

`execution`: for each binary, gateways in front of 10 and of 10,000 tools, in worker processes
and in process; rounds of 200 executions making one call, 2 ms apart (`PACE_MS=0` in the
environment: back to back), each series in turn, five rounds; prints each round's median and, at
the end, the median of the round medians. `BETWEEN=search` (or `describe`) puts an untimed search
of the catalog (or a describe of one tool) before each execution.

The client is this script writing JSON-RPC lines over stdio (no SDK, no async runtime).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ONE_CALL = "return (await tools.catalog.billing_list_items({ limit: 1 })).tool"
QUERIES = ["list files", "billing projects", "users in billing"]


class Gateway:
    def __init__(self, binary, fixture, tools, home, serve_args):
        folder = tempfile.mkdtemp()
        config = os.path.join(folder, "mcp.json")
        with open(config, "w") as file:
            json.dump({"mcpServers": {"catalog": {
                "command": fixture, "args": ["--name", "catalog", "--tools", str(tools)]}}}, file)
        env = dict(os.environ, XDG_CONFIG_HOME=home, TOOLWEAVE_LOG="warn")
        self.process = subprocess.Popen(
            [binary, "serve", "--config", config, *serve_args], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "catalog_cost", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == self.next_id:
                assert "result" in message, message
                assert not message["result"].get("isError"), message
                return message["result"]

    def call(self, tool, arguments):
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def status_kib(self, field):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.process.stdin.close()
        self.process.wait()


def memory(fixture, binaries, serve_args):
    for round in range(3):
        for binary in binaries:
            figures = []
            for pinning in ["on", "off"]:
                home = tempfile.mkdtemp()
                starts = ["first start", "restart"] if pinning == "on" else ["start"]
                for start in starts:
                    gateway = Gateway(binary, fixture, 10_000, home,
                                      ["--pin-tools", pinning, *serve_args])
                    gateway.call("search_tools", {"query": "list billing items"})
                    for _ in range(20):
                        gateway.call("execute_code", {"code": ONE_CALL})
                    time.sleep(1)
                    rss, peak = gateway.status_kib("VmRSS:"), gateway.status_kib("VmHWM:")
                    gateway.stop()
                    figures.append(f"pins {pinning} {start}: {rss / 1024:.1f} MiB (peak {peak / 1024:.1f})")
            print(f"round {round + 1} {binary}: " + ";  ".join(figures), flush=True)


def execution(fixture, binaries, serve_args):
    pace = float(os.environ.get("PACE_MS", "2")) / 1000
    between = os.environ.get("BETWEEN", "")
    series = []
    for binary in binaries:
        for isolation in ["worker", "in-process"]:
            for tools in [10, 10_000]:
                gateway = Gateway(binary, fixture, tools, tempfile.mkdtemp(),
                                  ["--isolation", isolation, *serve_args])
                gateway.call("search_tools", {"query": "list billing items"})
                for _ in range(20):
                    gateway.call("execute_code", {"code": ONE_CALL})
                series.append(((binary, isolation, tools), gateway, []))
    for round in range(5):
        for key, gateway, medians in series:
            samples = []
            for index in range(200):
                if between == "search":
                    gateway.call("search_tools", {"query": QUERIES[index % len(QUERIES)]})
                elif between == "describe":
                    gateway.call("describe_tools", {"names": ["catalog.billing_list_files"]})
                if pace:
                    time.sleep(pace)
                started = time.perf_counter_ns()
                gateway.call("execute_code", {"code": ONE_CALL})
                samples.append(time.perf_counter_ns() - started)
            medians.append(statistics.median(samples) / 1e6)
            print(f"round {round + 1}  {key[0]}  {key[1]:<10} {key[2]:>6} tools  {medians[-1]:.3f} ms",
                  flush=True)
    print("median of the round medians (spread):")
    for key, gateway, medians in series:
        print(f"  {key[0]}  {key[1]:<10} {key[2]:>6} tools  {statistics.median(medians):.3f} ms"
              f"  ({min(medians):.3f}-{max(medians):.3f})")
        gateway.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    serve_args = []
    if "--" in args:
        serve_args = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    {"memory": memory, "execution": execution}[args[0]](args[1], args[2:], serve_args)
