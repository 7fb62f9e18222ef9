#!/usr/bin/env python3
"""64 clients against three copies of toolweave sharing state, behind HAProxy round-robin.

    target/venv/bin/python scripts/copies_load.py BINARY FIXTURE [CLIENTS] [ROUNDS] [--kill]

Starts Debian's `redis-server` on a free loopback port, three `BINARY serve --http 127.0.0.1:0
--state redis://...` fronting the fixture server FIXTURE (the `fixture` binary of
toolweave-testkit), and HAProxy with `deploy/haproxy/haproxy-state.cfg` (plain round robin, no
pinning) in front of them. Then CLIENTS (default 64) clients of the official MCP Python SDK in
its default mode (MCP 2026-07-28) each run ROUNDS (default 10) executions in one session through
the session handle: each calls the fixture's `add`, keeps the sum in the store and checks the
sum the previous execution kept (maybe on another copy); every fifth is a destructive call whose
approval comes as a multi round-trip request, answered by a retry that may land on another copy.
With `--kill`, one copy is killed with SIGKILL a third of the way through.

Prints the executions answered and failed (with the first failures), and the latency of the
answered ones (p50, p90, p99, max) as the clients saw them, rounds of approvals included.
"""
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from mcp import Client, types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTENING = "toolweave: serving MCP at http://"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_port(port: int, limit: float = 15) -> None:
    until = time.monotonic() + limit
    while time.monotonic() < until:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listened on {port} within {limit} s")


def start_copy(binary: str, config: str, state: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [binary, "serve", "--http", "127.0.0.1:0", "--config", config, "--state", state,
         "--approval", "elicitation"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    for line in process.stderr:
        if line.startswith(LISTENING):
            address = line[len(LISTENING):].split("/")[0]
            # Keep reading its log, so that it never waits for the pipe.
            import threading
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
            return process, address
    raise SystemExit(f"a copy did not start (exit {process.wait()})")


def haproxy_config(port: int, copies: list[str]) -> str:
    lines = []
    with open(os.path.join(REPO, "deploy/haproxy/haproxy-state.cfg")) as documented:
        for line in documented:
            if line.strip().startswith("bind "):
                lines.append(f"    bind 127.0.0.1:{port}\n")
            elif not line.strip().startswith("server "):
                lines.append(line)
    lines += [f"    server copy{index + 1} {address}\n" for index, address in enumerate(copies)]
    return "".join(lines)


class Person:
    async def elicit(self, context, params) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"approve": True, "scope": "call"})


async def client(url: str, index: int, rounds: int, latencies: list, failures: list) -> None:
    person = Person()
    try:
        async with Client(url, read_timeout_seconds=60, input_required_max_rounds=10,
                          elicitation_callback=person.elicit) as connected:
            session = None
            kept = None
            for round in range(rounds):
                destructive = round % 5 == 4
                call = f'tools.fixture.remove({{ name: "r{round}" }})' if destructive else \
                    f'tools.fixture.add({{ a: {index}, b: {round} }})'
                code = (f'const last = await store.get("sum"); const now = await {call}; '
                        f'await store.set("sum", {round}); return [last, now]')
                arguments = {"code": code}
                if session is not None:
                    arguments["session"] = session
                sent = time.monotonic()
                try:
                    result = await connected.call_tool("execute_code", arguments)
                    took = time.monotonic() - sent
                    if result.is_error:
                        failures.append(f"client {index} round {round}: {result.content[0].text[:300]}")
                        continue
                    last, now = result.structured_content["result"]
                    expected = f"removed r{round}" if destructive else str(index + round)
                    if now != expected or (kept is not None and last != kept):
                        failures.append(f"client {index} round {round}: {[last, now]}, expected [{kept}, {expected}]")
                        continue
                    kept = round
                    session = result.structured_content["session"]
                    latencies.append(took)
                except Exception as error:  # a request that failed: its copy was killed
                    failures.append(f"client {index} round {round}: {error!r}"[:300])
    except Exception as error:
        failures.append(f"client {index}: {error!r}"[:300])


async def load(url: str, clients: int, rounds: int, kill: subprocess.Popen | None) -> tuple[list, list, float]:
    latencies: list[float] = []
    failures: list[str] = []
    started = time.monotonic()
    tasks = [asyncio.create_task(client(url, index, rounds, latencies, failures)) for index in range(clients)]
    if kill is not None:
        while len(latencies) + len(failures) < clients * rounds // 3:
            await asyncio.sleep(0.01)
        kill.send_signal(signal.SIGKILL)
        print(f"killed a copy (pid {kill.pid}) after {len(latencies)} answered executions")
    await asyncio.gather(*tasks)
    return latencies, failures, time.monotonic() - started


def percentile(sorted_values: list, p: int) -> float:
    return sorted_values[min(len(sorted_values) * p // 100, len(sorted_values) - 1)]


def main() -> None:
    args = [arg for arg in sys.argv[1:] if arg != "--kill"]
    kill = "--kill" in sys.argv[1:]
    binary, fixture = args[:2]
    clients = int(args[2]) if len(args) > 2 else 64
    rounds = int(args[3]) if len(args) > 3 else 10
    redis_server, haproxy = shutil.which("redis-server"), shutil.which("haproxy")
    if redis_server is None or haproxy is None:
        raise SystemExit("needs Debian's redis-server and haproxy (apt-get install redis-server haproxy)")
    processes = []
    with tempfile.TemporaryDirectory() as folder:
        try:
            config = os.path.join(folder, "mcp.json")
            with open(config, "w") as file:
                json.dump({"mcpServers": {"fixture": {"command": fixture}}}, file)
            redis_port = free_port()
            processes.append(subprocess.Popen(
                [redis_server, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_port(redis_port)
            state = f"redis://127.0.0.1:{redis_port}/0"
            copies = [start_copy(binary, config, state) for _ in range(3)]
            processes += [process for process, _ in copies]
            port = free_port()
            haproxy_cfg = os.path.join(folder, "haproxy.cfg")
            with open(haproxy_cfg, "w") as file:
                file.write(haproxy_config(port, [address for _, address in copies]))
            processes.append(subprocess.Popen([haproxy, "-db", "-f", haproxy_cfg],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_port(port)
            time.sleep(1.5)  # HAProxy's health checks find every copy up
            url = f"http://127.0.0.1:{port}/mcp"
            latencies, failures, elapsed = asyncio.run(load(url, clients, rounds, copies[1][0] if kill else None))
        finally:
            for process in reversed(processes):
                process.kill()
                process.wait()
    latencies.sort()
    print(f"{clients} clients x {rounds} executions through 3 copies behind HAProxy (round robin, --state): "
          f"{len(latencies)} answered, {len(failures)} failed in {elapsed:.1f} s "
          f"({len(latencies) / elapsed:.0f}/s)")
    if latencies:
        print("latency: p50 {:.0f} ms, p90 {:.0f} ms, p99 {:.0f} ms, max {:.0f} ms".format(
            *(percentile(latencies, p) * 1000 for p in (50, 90, 99)), latencies[-1] * 1000))
    for failure in failures[:10]:
        print(f"  failed: {failure}")


if __name__ == "__main__":
    main()
