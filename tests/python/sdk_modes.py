#!/usr/bin/env python3
"""The official MCP Python SDK client in one of its modes: its default (`Client(...)`, which speaks
MCP 2026-07-28: no initialize, capabilities on every request, questions as multi round-trip
requests) or `mode="legacy"` (MCP 2025-11-25), over stdio and over streamable HTTP.

Usage: sdk_modes.py TOOLWEAVE_BINARY CONFIG MODE
CONFIG fronts the fixture server as "fixture" (its `remove` tool is marked destructive; `ask`,
`sample` and `roots` ask the client). MODE is "default" or "legacy".
Checks, over each transport: the first execute_code with a tool call is answered (its time from
connecting is printed, not checked); one execution asks the client five things in turn (llm.ask,
the fixture's elicitation, an approval of the destructive call, the fixture's sampling and roots,
llm.ask again) and each reaches the callback once, in order, with no call run twice, and code gets
every answer; in the default mode, a retry with a changed or already used requestState is
refused and the paused execution goes on with the right one; a client without callbacks is refused naming the capability it did not declare; in
the default mode, server/discover advertises tools and a ttlMs of an hour.
Prints one "timing:" line per transport. Exits 0 and prints "sdk_modes: ok" when every check passes;
prints the failure and exits 1 otherwise.
"""
import json
import time

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from session import run_script, serving_http, text_of

FIRST = 'return await tools.fixture.echo({ message: "first" })'

ASKS = """
const first = await llm.ask("one", { maxTokens: 10 });
const asked = await tools.fixture.ask({ message: "Your name?" });
const removed = await tools.fixture.remove({ name: "draft" });
const sampled = await tools.fixture.sample({ prompt: "2 + 2?" });
const roots = await tools.fixture.roots({});
const second = await llm.ask("two", { maxTokens: 10 });
return { first, asked, removed, sampled, roots, second };
"""

UNDECLARED = """
const tried = async (f) => { try { return JSON.stringify(await f()) } catch (e) { return String(e) } };
return {
  asked: await tried(() => tools.fixture.ask({ message: "Your name?" })),
  llm: await tried(() => llm.ask("one", { maxTokens: 10 })),
};
"""

REMOVE_TWICE = """
return [await tools.fixture.remove({ name: "a" }), await tools.fixture.remove({ name: "b" })];
"""


class Person:
    """The person and the model at the client: answer each callback, in the order asked."""

    def __init__(self) -> None:
        self.happened: list[str] = []

    async def elicit(self, context, params) -> types.ElicitResult:
        self.happened.append(f"elicit: {params.message.splitlines()[0]}")
        if params.message.startswith("[fixture] "):
            return types.ElicitResult(action="accept", content={"answer": "Grace Hopper"})
        return types.ElicitResult(action="accept", content={"approve": True, "scope": "call"})

    async def sample(self, context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = params.messages[-1].content.text
        self.happened.append(f"sample: {prompt}")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"answer to {prompt}"),
            model="toolweave-test-model",
            stop_reason="endTurn",
        )

    async def roots(self, context) -> types.ListRootsResult:
        self.happened.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])


def client(target, mode: str, person: Person | None = None) -> Client:
    options = {"read_timeout_seconds": 60, "input_required_max_rounds": 20}
    if mode == "legacy":
        options["mode"] = "legacy"
    if person is not None:
        options.update(
            elicitation_callback=person.elicit,
            sampling_callback=person.sample,
            list_roots_callback=person.roots,
        )
    return Client(target, **options)


async def value(connected: Client, code: str):
    result = await connected.call_tool("execute_code", {"code": code})
    assert not result.is_error, text_of(result)
    return result.structured_content["result"]


async def refused(session, arguments: dict, responses, state: str) -> str:
    try:
        await session.call_tool(
            "execute_code", arguments, input_responses=responses, request_state=state, allow_input_required=True
        )
    except MCPError as error:
        return str(error)
    raise AssertionError(f"a retry with requestState {state!r} was not refused")


async def check_retries(connected: Client) -> None:
    """Drives the rounds by hand: a changed or used requestState is refused, and does not disturb
    the paused execution, which goes on with the right one."""
    session = connected.session
    arguments = {"code": REMOVE_TWICE}
    first = await session.call_tool("execute_code", arguments, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    ((key, asked),) = first.input_requests.items()
    assert "fixture.remove" in asked.params.message, asked
    approve = {key: types.ElicitResult(action="accept", content={"approve": True, "scope": "call"})}
    state = first.request_state
    changed = state[:-1] + ("A" if state[-1] != "A" else "B")
    why = await refused(session, arguments, approve, changed)
    assert "toolweave cannot resume this call: its requestState was not made by this toolweave process" in why, why
    second = await session.call_tool(
        "execute_code", arguments, input_responses=approve, request_state=state, allow_input_required=True
    )
    assert isinstance(second, types.InputRequiredResult), second
    why = await refused(session, arguments, approve, state)
    assert "already used, or is of an earlier round" in why, why
    ((key, _),) = second.input_requests.items()
    approve = {key: types.ElicitResult(action="accept", content={"approve": True, "scope": "call"})}
    done = await session.call_tool(
        "execute_code", arguments, input_responses=approve, request_state=second.request_state, allow_input_required=True
    )
    assert isinstance(done, types.CallToolResult), done
    assert done.structured_content["result"] == ["removed a", "removed b"], done


async def check(target, mode: str, transport: str) -> None:
    person = Person()
    started = time.monotonic()
    async with client(target, mode, person) as connected:
        first = await value(connected, FIRST)
        took = (time.monotonic() - started) * 1000
        print(f"timing: {mode} {transport}: connect and first execute_code with a tool call: {took:.0f} ms")
        assert first == "first", first

        if mode == "default":
            discovered = connected.session.discover_result
            assert discovered is not None, "the default mode discovers"
            assert "2026-07-28" in discovered.supported_versions, discovered
            assert discovered.ttl_ms == 3_600_000, discovered
            # Its three tools do not change, so no list changes are announced for them.
            assert discovered.capabilities.tools is not None, discovered

        answers = await value(connected, ASKS)
        assert person.happened == [
            "sample: one",
            "elicit: [fixture] Your name?",
            "elicit: Code run by toolweave wants to call fixture.remove (its server marks it destructive), with these arguments:",
            "sample: 2 + 2?",
            "roots",
            "sample: two",
        ], person.happened
        assert answers["first"] == "answer to one", answers
        assert answers["asked"]["content"] == {"answer": "Grace Hopper"}, answers
        assert answers["removed"] == "removed draft", answers
        assert "answer to 2 + 2?" in json.dumps(answers["sampled"]), answers
        assert answers["roots"]["roots"][0]["uri"] == "file:///work/project", answers
        assert answers["second"] == "answer to two", answers

        if mode == "default":
            await check_retries(connected)

    async with client(target, mode) as bare:
        refused = await value(bare, UNDECLARED)
        assert "elicitation" in refused["asked"], refused
        assert "did not declare sampling" in refused["llm"], refused
        if mode == "default":
            assert "does not support elicitation (it did not declare that capability)" in refused["asked"], refused


async def main(binary: str, config: str, mode: str) -> None:
    assert mode in ("default", "legacy"), mode
    flags = ["--approval", "elicitation"]
    await check(StdioServerParameters(command=binary, args=["serve", "--config", config, *flags]), mode, "stdio")
    with serving_http(binary, config, *flags) as url:
        await check(url, mode, "http")


if __name__ == "__main__":
    run_script("sdk_modes", main)
