#!/usr/bin/env python3
"""A FastMCP 4 server speaking MCP 2026-07-28, run by toolweave as an upstream server.

Usage: fastmcp_upstream.py [stdio | http PORT_FILE]
Runs over stdio, or over streamable HTTP on a free port of 127.0.0.1 (written to PORT_FILE once
listening). Its tools:
- `confirm_order(item)` asks the person in the 2026-07-28 way: its first round returns an
  `InputRequiredResult` with a form elicitation, and the retry reads the answer (FastMCP refuses
  such a result on a connection of an earlier revision);
- `crunch(numbers)` runs only as a task (the tasks extension, on an in-memory Docket): the call
  returns a task at once, and its result (the sum) comes once the task is done;
- `crunch_slowly(seconds)` is a task that takes that long, for timeouts and cancellation.
"""
import asyncio
import sys
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

server = FastMCP("fastmcp-upstream")
server.add_extension(TasksExtension(url="memory://"))

QUICK_POLLS = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=100))


@server.tool
async def confirm_order(item: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Orders `item` once the person confirms it."""
    answers = ctx.input_responses or {}
    answer = answers.get("confirm")
    if answer is None:
        question = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(
                message=f"Order {item}?",
                requested_schema={
                    "type": "object",
                    "properties": {"note": {"type": "string", "title": "A note for the shop"}},
                    "required": ["note"],
                },
            )
        )
        return mcp_types.InputRequiredResult(input_requests={"confirm": question})
    if not isinstance(answer, dict):
        answer = answer.model_dump(by_alias=True, exclude_none=True)
    if answer.get("action") != "accept":
        return f"not ordered: {item} ({answer.get('action')})"
    return f"ordered: {item}, note: {answer.get('content', {}).get('note')}"


@server.tool(task=QUICK_POLLS)
async def crunch(numbers: list[int]) -> str:
    """Adds `numbers`, as a task."""
    await asyncio.sleep(0.3)
    return f"sum: {sum(numbers)}"


@server.tool(task=QUICK_POLLS)
async def crunch_slowly(seconds: float) -> str:
    """Takes `seconds`, as a task."""
    await asyncio.sleep(seconds)
    return "done"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with open(sys.argv[2], "w") as written:
            written.write(str(port))
        server.run(transport="http", host="127.0.0.1", port=port, show_banner=False)
    else:
        server.run(show_banner=False)


if __name__ == "__main__":
    main()
