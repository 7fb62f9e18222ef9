#!/usr/bin/env python3
"""The official MCP Python SDK client in one of its modes, against `toolweave serve`: long calls as
tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`).

Usage: sdk_tasks.py TOOLWEAVE_BINARY CONFIG MODE
CONFIG fronts the fixture server as "fixture" (its `remove` tool is marked destructive, so a call of
it asks for approval; `ask` asks the person through elicitation). MODE is "default" (the SDK's
default, MCP 2026-07-28) or "legacy" (MCP 2025-11-25).

The SDK 2.3.0 has no client methods for tasks in either mode. In the default mode it offers what a
client extension needs: the extension is declared on every request through `Client(extensions=...)`,
a `ResultClaim` for `resultType: "task"` hands the task handle back (or, through `Client.call_tool`,
polls it to the end), and `tasks/get`, `tasks/update` and `tasks/cancel` are sent with the SDK's own
`ClientSession.send_request` over its transport, with the `_meta` and `Mcp-Name` header the SDK adds.
In legacy mode the SDK refuses claimed results (they exist only on a 2026-07-28 wire), so the
JSON-RPC of the 2025-11-25 experimental tasks is sent with `send_request` as well.

Checks in the default mode, over stdio and over HTTP with two identities:
- `server/discover` advertises the extension;
- an execution asked for by a client that declares the extension answers at once with a task
  handle (`working`: the code still sleeps), `tasks/get` polls it to `completed`, and its result is
  that of the same code called without the extension; `Client.call_tool` with the extension gets
  the same result through the claim;
- the code's `progress(...)` shows in `statusMessage` while it runs;
- `tasks/cancel` stops the execution: the task becomes `cancelled` (toolweave says so only once the
  execution has ended) long before the code would have finished;
- an execution that asks the person something makes the task `input_required` with the question
  under `inputRequests`; `tasks/update` with the answer resumes it, its next question (an approval)
  comes under a new key, no question is asked twice (nothing ran again), and the result has both
  answers;
- over HTTP, another identity's `tasks/get` of the task is refused naming why, its `tasks/cancel`
  is acknowledged but cancels nothing, and an unknown id is refused naming why.
Checks in legacy mode (2025-11-25, HTTP): `initialize` offers no tasks, a `tools/call` that asks for
a 2025-11-25 task (`"task": {"ttl": ...}`) is answered with the call's result, and `tasks/get` is
refused.
Exits 0 and prints "sdk_tasks: ok" when every check passes; prints the failure and exits 1 otherwise.
"""
import asyncio
import json
import os
import tempfile
from typing import Any, Literal

from mcp import Client, types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import Field, TypeAdapter
from session import run_script, serving_http, text_of

TASKS = "io.modelcontextprotocol/tasks"
ALICE = "tw-alice-token-7f2c41"
BOB = "tw-bob-token-93ad0e"
RAW = TypeAdapter(dict[str, Any])

SLOW_ANSWER = "await new Promise((done) => setTimeout(done, 1500)); return { answer: 6 * 7 };"
PROGRESS = 'progress(1, 3, "first step"); await new Promise((done) => setTimeout(done, 30000)); return 1;'
LONG = "await new Promise((done) => setTimeout(done, 30000)); return 'finished';"
ASKS = """
const asked = await tools.fixture.ask({ message: "Your name?" });
const removed = await tools.fixture.remove({ name: "draft" });
return { asked, removed };
"""


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class UpdateTask(types.Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param = "taskId"


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


class CreatedTask(types.Result):
    """A task handle (`resultType: "task"`)."""

    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str
    ttl_ms: int | None = Field(alias="ttlMs")
    poll_interval_ms: int | None = Field(alias="pollIntervalMs", default=None)


async def get(session, task_id: str) -> dict:
    return await session.send_request(GetTask(params=TaskParams(taskId=task_id)), RAW)


async def poll(session, task_id: str, until, seconds: float = 30) -> dict:
    """`tasks/get` every 100 ms until `until(task)` holds; the task then."""
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        task = await get(session, task_id)
        if until(task):
            return task
        assert asyncio.get_running_loop().time() < deadline, f"the task never got there: {task}"
        await asyncio.sleep(0.1)


def terminal(task: dict) -> bool:
    return task["status"] in ("completed", "failed", "cancelled")


async def resolve(created: CreatedTask, context: ClaimContext) -> types.CallToolResult:
    """What a client that hides tasks does: poll the handle to its end."""
    task = await poll(context.session, created.task_id, terminal)
    assert task["status"] == "completed", task
    return types.CallToolResult.model_validate(task["result"])


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=resolve)]


async def elicit(context, params) -> types.ElicitResult:
    raise AssertionError(f"a task's question came as a request: {params}")


def tasks_client(target) -> Client:
    # An elicitation callback declares the capability; a task's questions come under inputRequests.
    return Client(target, extensions=[Tasks()], elicitation_callback=elicit, read_timeout_seconds=60)


async def start(connected: Client, code: str) -> CreatedTask:
    handle = await connected.session.call_tool("execute_code", {"code": code}, allow_claimed=True)
    assert isinstance(handle, CreatedTask), f"no task handle: {handle}"
    return handle


def comparable(result: dict) -> tuple:
    """What an execution's result says, without what differs from run to run (its duration)."""
    structured = dict(result.get("structuredContent") or {})
    structured.pop("stats", None)
    structured.pop("session", None)
    first_line = result["content"][0]["text"].splitlines()[0]
    return result.get("isError", False), structured, first_line


async def answer_questions(connected: Client, handle: CreatedTask) -> tuple[dict, list]:
    """Answers the task's questions as they come, each once: the person's name, and approval of
    any call; the task at its end, and the (key, first line) of each question."""
    asked = []
    while True:
        task = await poll(connected.session, handle.task_id, lambda task: task["status"] != "working")
        if task["status"] != "input_required":
            return task, asked
        assert task["statusMessage"].startswith("the call waits for the answers to inputRequests"), task
        requests = task["inputRequests"]
        assert len(requests) == 1, requests
        (key, request), = requests.items()
        assert key not in [seen for seen, _ in asked], (key, asked)
        message = request["params"]["message"].splitlines()[0]
        asked.append((key, message))
        if message.startswith("[fixture] "):
            answer = {"action": "accept", "content": {"answer": "Grace Hopper"}}
        else:
            answer = {"action": "accept", "content": {"approve": True, "scope": "call"}}
        update = UpdateTask(params=UpdateParams(taskId=handle.task_id, inputResponses={key: answer}))
        await connected.session.send_request(update, RAW)
        await poll(connected.session, handle.task_id, lambda task, key=key: key not in (task.get("inputRequests") or {}))


async def check_tasks(target_of) -> None:
    async with tasks_client(target_of(ALICE)) as connected, Client(target_of(ALICE), read_timeout_seconds=60) as plain:
        discovered = connected.session.discover_result
        assert discovered is not None and TASKS in (discovered.capabilities.extensions or {}), discovered

        # Created at once, polled to completion, the result of a plain call.
        handle = await start(connected, SLOW_ANSWER)
        assert handle.status == "working", handle
        assert handle.ttl_ms == 3_600_000 and handle.poll_interval_ms == 500, handle
        done = await poll(connected.session, handle.task_id, terminal)
        assert done["status"] == "completed", done
        direct = await plain.call_tool("execute_code", {"code": SLOW_ANSWER})
        assert direct.structured_content["result"] == {"answer": 42}, text_of(direct)
        assert comparable(done["result"]) == comparable(direct.model_dump(by_alias=True, mode="json")), (done, direct)
        through_claim = await connected.call_tool("execute_code", {"code": SLOW_ANSWER})
        assert through_claim.structured_content["result"] == {"answer": 42}, text_of(through_claim)

        # Progress reaches the client in the task's status.
        handle = await start(connected, PROGRESS)
        running = await poll(connected.session, handle.task_id, lambda task: "first step" in (task.get("statusMessage") or ""))
        assert running["status"] == "working" and running["statusMessage"] == "progress 1/3: first step", running

        # Cancelled: the execution ends long before its 30 s.
        await connected.session.send_request(CancelTask(params=TaskParams(taskId=handle.task_id)), RAW)
        ended = await poll(connected.session, handle.task_id, terminal, seconds=10)
        assert ended["status"] == "cancelled", ended
        assert "result" not in ended, ended

        # Questions: input_required, answered with tasks/update; nothing is asked twice.
        handle = await start(connected, ASKS)
        task, asked = await answer_questions(connected, handle)
        assert task["status"] == "completed", task
        messages = [message for _, message in asked]
        assert len(messages) == 2 and messages[0] == "[fixture] Your name?", asked
        assert "fixture.remove" in messages[1], asked
        value = task["result"]["structuredContent"]["result"]
        assert value["removed"] == "removed draft" and "Grace Hopper" in json.dumps(value["asked"]), value


def with_token(url: str):
    def target(token: str):
        return streamable_http_client(url, http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}))

    return target


async def check_identities(url: str) -> None:
    target = with_token(url)
    async with tasks_client(target(ALICE)) as alice, tasks_client(target(BOB)) as bob:
        handle = await start(alice, SLOW_ANSWER)
        try:
            await get(bob.session, handle.task_id)
            raise AssertionError("another identity read the task")
        except MCPError as refused:
            assert refused.code == -32602 and "started by another identity" in refused.message, refused
        # Acknowledged, as the extension asks, and nothing is cancelled.
        await bob.session.send_request(CancelTask(params=TaskParams(taskId=handle.task_id)), RAW)
        done = await poll(alice.session, handle.task_id, terminal)
        assert done["status"] == "completed", done
        try:
            await get(alice.session, "task-not-one-of-toolweaves")
            raise AssertionError("an unknown task was read")
        except MCPError as refused:
            assert refused.code == -32602 and "no such task is kept here" in refused.message, refused
            assert len(refused.message) < 400, refused.message


class LegacyParams(types.RequestParams):
    name: str
    arguments: dict[str, Any]
    task: dict[str, Any]


class LegacyCall(types.Request[LegacyParams, Literal["tools/call"]]):
    method: Literal["tools/call"] = "tools/call"
    name_param = "name"


async def check_legacy(url: str) -> None:
    async with Client(with_token(url)(ALICE), mode="legacy", read_timeout_seconds=60) as connected:
        assert TASKS not in (connected.server_capabilities.extensions or {}), connected.server_capabilities
        call = LegacyCall(params=LegacyParams(name="execute_code", arguments={"code": SLOW_ANSWER}, task={"ttl": 60000}))
        answered = await connected.session.send_request(call, RAW)
        assert "taskId" not in answered and "task" not in answered, answered
        assert answered["structuredContent"]["result"] == {"answer": 42}, answered
        try:
            await get(connected.session, "task-1")
            raise AssertionError("tasks/get was answered for a 2025-11-25 session")
        except MCPError as refused:
            assert refused.code in (-32601, -32021), refused


def settings_file(folder: str) -> str:
    path = os.path.join(folder, "settings.json")
    with open(path, "w") as file:
        json.dump({"identities": {"alice": {"tokenEnv": "TW_ALICE_TOKEN"}, "bob": {"tokenEnv": "TW_BOB_TOKEN"}}}, file)
    return path


async def main(binary: str, config: str, mode: str) -> None:
    os.environ["TW_ALICE_TOKEN"] = ALICE
    os.environ["TW_BOB_TOKEN"] = BOB
    with tempfile.TemporaryDirectory() as folder, serving_http(binary, config, "--settings", settings_file(folder)) as url:
        if mode == "legacy":
            await check_legacy(url)
            return
        stdio = StdioServerParameters(command=binary, args=["serve", "--config", config])
        await check_tasks(lambda _token: stdio)
        await check_tasks(with_token(url))
        await check_identities(url)


if __name__ == "__main__":
    run_script("sdk_tasks", main)
