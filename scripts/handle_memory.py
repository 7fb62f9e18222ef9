#!/usr/bin/env python3
"""What 1,000 result handles cost the gateway, and whether their memory comes back when they expire.

Usage: handle_memory.py TOOLWEAVE_BINARY CONFIG [--isolation worker|in-process]
Starts `toolweave serve` over stdio (through the official MCP Python SDK), reads its resident
memory (VmRSS), keeps 1,000 values of 50 KB each behind handles (code calls handle(value) in
batches of 100 executions' worth), reads the memory again, waits past --handle-ttl-ms, runs one
more execution and reads it a third time. Prints the three figures in MiB.
"""
import asyncio
import os
import sys
import tempfile

from mcp import Client
from mcp.client.stdio import StdioServerParameters

HANDLES = 1000
BYTES = 50_000
TTL_MS = 5000


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def main(binary: str, config: str, isolation: str) -> None:
    pidfile = tempfile.mktemp()
    params = StdioServerParameters(
        command="sh",
        args=["-c", f'echo $$ > {pidfile}; exec "$0" "$@"', binary, "serve", "--config", config,
              "--isolation", isolation, "--handle-ttl-ms", str(TTL_MS)],
    )
    async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
        pid = int(open(pidfile).read())
        os.unlink(pidfile)
        await client.call_tool("execute_code", {"code": "return 1"})
        before = rss_mib(pid)
        code = f"""
        const made = [];
        for (let i = 0; i < 100; i++) made.push((await handle(String(i).padEnd({BYTES}, "x"))).handle);
        return made.length;
        """
        for _ in range(HANDLES // 100):
            result = await client.call_tool("execute_code", {"code": code})
            assert not result.is_error, result
        kept = rss_mib(pid)
        await asyncio.sleep(TTL_MS / 1000 + 2)
        await client.call_tool("execute_code", {"code": "return 1"})
        after = rss_mib(pid)
        print(f"isolation {isolation}: RSS before {before:.1f} MiB, with {HANDLES} handles of {BYTES} bytes "
              f"{kept:.1f} MiB, after they expired {after:.1f} MiB")


if __name__ == "__main__":
    isolation = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--isolation" else "worker"
    asyncio.run(main(sys.argv[1], sys.argv[2], isolation))
