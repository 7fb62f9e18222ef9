#!/usr/bin/env python3
"""The official MCP Python SDK client in one of its modes against three copies of `toolweave serve
--http --state redis://...` behind HAProxy, round-robin with no pinning: each request may reach
any copy.

Usage: sdk_copies.py TOOLWEAVE_BINARY URL KILLED_PID MODE
URL is the balancer's MCP address; KILLED_PID is the process id of the copy this script kills with
SIGKILL partway (the copies front the fixture server as "fixture": `remove` is marked destructive,
`slow` waits). MODE is "default" (MCP 2026-07-28, copies given `--approval elicitation`) or
"legacy" (MCP 2025-11-25, copies given `--stateless`: its approvals are not asked of the client,
so the approval checks are the default mode's only).

Checks:
- store values and result handles kept by one execution are read back by the next ones, through
  the other copies, with the session handle; and a value written on one copy is read on another;
- approvals asked as multi round-trip requests and answered by retries that land on other copies
  complete their executions, no call run twice;
- in the default mode, tasks: one made by one copy is read with `tasks/get`, answered with
  `tasks/update` and cancelled with `tasks/cancel` through the others (see sdk_tasks.py);
- after one copy is killed with SIGKILL: executions paused on it fail with an error saying its
  copy stopped and to run the code again, those paused on the others complete; of executions
  running when it was killed, only its own may fail; the store and every handle are still read
  back, and new executions are answered.
Exits 0 and prints "sdk_copies: ok" when every check passes; prints the failure and exits 1
otherwise.
"""
import asyncio
import os
import signal

from mcp import Client, types
from mcp.shared.exceptions import MCPError
from sdk_tasks import LONG, SLOW_ANSWER, RAW, CancelTask, TaskParams, answer_questions, get, poll, start, tasks_client, terminal, ASKS
from session import run_script, text_of

REMOVE_TWICE = """
return [await tools.fixture.remove({ name: "a" }), await tools.fixture.remove({ name: "b" })];
"""

# One execution per copy, paused on each, and as many running at once.
COPIES = 3


class Person:
    """Approves every question, counting them."""

    def __init__(self) -> None:
        self.asked = 0

    async def elicit(self, context, params) -> types.ElicitResult:
        self.asked += 1
        assert "fixture.remove" in params.message, params.message
        return types.ElicitResult(action="accept", content={"approve": True, "scope": "call"})


def approve(key: str) -> dict:
    return {key: types.ElicitResult(action="accept", content={"approve": True, "scope": "call"})}


async def execute(connected: Client, code: str, session: str | None = None):
    arguments = {"code": code}
    if session is not None:
        arguments["session"] = session
    result = await connected.call_tool("execute_code", arguments)
    text = text_of(result)
    assert not result.is_error, text
    return result.structured_content["result"], result.structured_content["session"]


async def state_across_copies(connected: Client) -> tuple[str, str]:
    """Keeps a value and a handle; reads them back through every copy. The session and handle."""
    kept, session = await execute(
        connected, 'await store.set("plan", { step: 2 }); return (await handle([1, 2, 3])).handle'
    )
    for round in range(2 * COPIES):
        read, session = await execute(
            connected,
            f'const last = await store.get("round"); await store.set("round", {round}); '
            f'return [await store.get("plan"), await results.get("{kept}"), last]',
            session,
        )
        assert read == [{"step": 2}, [1, 2, 3], round - 1 if round else None], (round, read)
    return session, kept


async def approvals_across_copies(connected: Client, person: Person) -> None:
    """Each approval's retry lands on the next copy (round-robin), not the one that paused."""
    for _ in range(COPIES):
        before = person.asked
        removed, _ = await execute(connected, REMOVE_TWICE)
        assert removed == ["removed a", "removed b"], removed
        assert person.asked == before + 2, (before, person.asked)


async def paused(connected: Client) -> tuple[str, types.InputRequiredResult]:
    first = await connected.session.call_tool("execute_code", {"code": REMOVE_TWICE}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    ((key, _),) = first.input_requests.items()
    return key, first


async def finish(connected: Client, key: str, first: types.InputRequiredResult):
    """Answers the paused execution's questions until it finishes: its value, or the error."""
    state, responses = first.request_state, approve(key)
    for _ in range(4):
        try:
            answer = await connected.session.call_tool(
                "execute_code", {"code": REMOVE_TWICE},
                input_responses=responses, request_state=state, allow_input_required=True,
            )
        except MCPError as error:
            return str(error)
        if isinstance(answer, types.CallToolResult):
            assert not answer.is_error, text_of(answer)
            return answer.structured_content["result"]
        ((key, _),) = answer.input_requests.items()
        state, responses = answer.request_state, approve(key)
    raise AssertionError("more rounds than the code has questions")


async def running(connected: Client, session: str):
    try:
        value, _ = await execute(connected, 'await tools.fixture.slow({ ms: 3000 }); return "done"', session)
        return value
    except Exception as error:  # the copy running it was killed: the request failed
        return f"failed: {error!r}"


async def one_copy_killed(connected: Client, session: str, kept: str, killed: int, mode: str) -> None:
    waiting = [await paused(connected) for _ in range(COPIES)] if mode == "default" else []
    runs = [asyncio.create_task(running(connected, session)) for _ in range(COPIES)]
    await asyncio.sleep(1)
    os.kill(killed, signal.SIGKILL)

    finished = [await finish(connected, key, first) for key, first in waiting]
    lost = [answer for answer in finished if answer != ["removed a", "removed b"]]
    # Round robin put one of the three on the killed copy.
    assert len(lost) == (1 if waiting else 0), finished
    for answer in lost:
        assert "does not answer" in answer and "it stopped, and the executions it ran were lost with it; run the code again" in answer, answer

    values = await asyncio.gather(*runs)
    assert sum(value == "done" for value in values) >= COPIES - 1, values

    for round in range(2 * COPIES):
        read, session = await execute(
            connected, f'return [await store.get("plan"), await results.get("{kept}")]', session
        )
        assert read == [{"step": 2}, [1, 2, 3]], (round, read)
    print(f"sdk_copies: {mode}: paused executions lost with the killed copy: {len(lost)} of {len(waiting)}; running: {values}")


async def tasks_across_copies(url: str) -> None:
    """A task made by one copy, read, answered and cancelled through any copy."""
    async with tasks_client(url) as connected:
        handle = await start(connected, SLOW_ANSWER)
        seen = [await get(connected.session, handle.task_id) for _ in range(COPIES)]
        assert [task["taskId"] for task in seen] == [handle.task_id] * COPIES, seen
        done = await poll(connected.session, handle.task_id, terminal)
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"]["result"] == {"answer": 42}, done
        handle = await start(connected, ASKS)
        task, asked = await answer_questions(connected, handle)
        assert task["status"] == "completed" and len(asked) == 2, (task, asked)
        handle = await start(connected, LONG)
        for _ in range(COPIES):
            await connected.session.send_request(CancelTask(params=TaskParams(taskId=handle.task_id)), RAW)
        ended = await poll(connected.session, handle.task_id, terminal, seconds=10)
        assert ended["status"] == "cancelled", ended


async def main(binary: str, url: str, killed: str, mode: str) -> None:
    del binary
    assert mode in ("default", "legacy"), mode
    person = Person()
    options = {"read_timeout_seconds": 60, "input_required_max_rounds": 20, "elicitation_callback": person.elicit}
    if mode == "legacy":
        options["mode"] = "legacy"
    async with Client(url, **options) as connected:
        session, kept = await state_across_copies(connected)
        if mode == "default":
            await approvals_across_copies(connected, person)
            await tasks_across_copies(url)
        await one_copy_killed(connected, session, kept, int(killed), mode)


if __name__ == "__main__":
    run_script("sdk_copies", main)
