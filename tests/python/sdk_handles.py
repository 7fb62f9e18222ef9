#!/usr/bin/env python3
"""The official MCP Python SDK client in one of its modes, against `toolweave serve`: a call that
needs a person, from a client that cannot be asked, answers early; and state without a protocol
session, through a session handle.

Usage: sdk_handles.py TOOLWEAVE_BINARY CONFIG MODE
CONFIG fronts the fixture server as "fixture" (its `remove` tool is marked destructive, so a call
of it waits for approval). MODE is "default" (the SDK's default, MCP 2026-07-28, against
`serve --http`) or "legacy" (MCP 2025-11-25, against `serve --http --stateless`).

Checks, with a client that declares no elicitation:
- over stdio, a call waiting at the approval page makes the execution answer early, naming the
  page and how to pick the answer up; `execute_code` with "resume" waits for the execution, which
  goes on once the person approves at the page; a call of another execution waiting behind that
  question answers early too; a garbage or used "resume" is refused;
- over HTTP without an MCP session, each answer carries a "session" handle (in
  structuredContent, and one line of the text); with it, store.set then store.get in the next
  execution, a result handle read back, and an approval "for the rest of this session" honoured
  by the next execution (and not by another session); a handle of another identity, a garbage one
  and an expired one are refused with an error naming what to do.
Exits 0 and prints "sdk_handles: ok" when every check passes; prints the failure and exits 1
otherwise.
"""
import asyncio
import json
import os
import tempfile
import urllib.parse
import urllib.request

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from session import run_script, serving_http, text_of

ALICE = "tw-alice-token-5c1e9a"
BOB = "tw-bob-token-0d73b2"
# How long the HTTP gateway keeps an unused session, so that the test sees one expire.
SESSION_TTL_MS = 4000


def remove(name: str) -> str:
    return f"try {{ return await tools.fixture.remove({{ name: {json.dumps(name)} }}) }} catch (e) {{ return String(e) }}"


def client(target, mode: str) -> Client:
    """A client without elicitation, sampling or roots callbacks: it cannot be asked anything."""
    options = {"read_timeout_seconds": 30}
    if mode == "legacy":
        options["mode"] = "legacy"
    return Client(target, **options)


def with_token(url: str, token: str):
    return streamable_http_client(url, http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}))


def answer_page(url: str, answer: str, scope: str) -> None:
    """Answers a call waiting at toolweave's approval page, as the person's browser would."""
    token = url.rsplit("/", 1)[1]
    origin = url.split("/approval/")[0]
    body = urllib.parse.urlencode({"token": token, "answer": answer, "scope": scope}).encode()
    request = urllib.request.Request(
        url, data=body, method="POST",
        headers={"content-type": "application/x-www-form-urlencoded", "origin": origin},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200, response.status


async def execute(connected: Client, code: str, **arguments):
    result = await connected.call_tool("execute_code", {"code": code, **arguments})
    return result, text_of(result)


def waiting_of(result, text: str, tool: str = "fixture.remove") -> dict:
    """The early answer of an execution whose call waits at the approval page."""
    assert not result.is_error, text
    assert result.structured_content is not None and "waiting" in result.structured_content, text
    waiting = result.structured_content["waiting"]
    (call,) = waiting["approvals"]
    assert call["tool"] == tool, waiting
    assert call["url"].startswith("http://127.0.0.1:"), waiting
    assert text.startswith("Not finished: the execution waits for a person's approval: a call of fixture.remove (its server marks it destructive) waits at "), text
    assert call["url"] in text and f"toolweave approve {call['id']}" in text, text
    assert f'call execute_code with {{"code": "", "resume": "{waiting["resume"]}"}}' in text, text
    return waiting


async def resumed(connected: Client, waiting: dict, code: str = ""):
    """`execute_code` with the early answer's "resume": the execution's answer, when it comes."""
    return await execute(connected, code, resume=waiting["resume"])


async def early_answer_over_stdio(binary: str, config: str, mode: str) -> None:
    params = StdioServerParameters(
        command=binary, args=["serve", "--config", config, "--approval-timeout-ms", "60000"],
    )
    async with client(params, mode) as connected:
        # The person approves before the model picks the answer up.
        waiting = waiting_of(*await execute(connected, remove("draft")))
        answer_page(waiting["approvals"][0]["url"], "approve", "call")
        result, text = await resumed(connected, waiting)
        assert not result.is_error, text
        assert result.structured_content["result"] == "removed draft", text

        # The model waits first; the person answers meanwhile. Nothing runs twice.
        code = f'const first = await tools.fixture.echo({{ message: "once" }}); return [first, await (async () => {{ {remove("later")} }})()]'
        waiting = waiting_of(*await execute(connected, code))
        picking_up = asyncio.create_task(resumed(connected, waiting, code="return 'ignored'"))
        await asyncio.sleep(0.3)
        assert not picking_up.done(), "resume answered before the person did"
        answer_page(waiting["approvals"][0]["url"], "deny", "call")
        result, text = await picking_up
        assert not result.is_error, text
        first, refused = result.structured_content["result"]
        assert first == "once", text
        assert "the person asked declined this call" in refused, text
        assert any('"code" was not run' in warning for warning in result.structured_content["warnings"]), text

        # A call of another execution waits behind the question still open: it answers early
        # too, naming where that question waits; once it is answered, its own question does.
        first = waiting_of(*await execute(connected, remove("one")))
        result, text = await execute(connected, remove("two"))
        queued = result.structured_content["waiting"]
        assert queued["approvals"][0]["url"] == first["approvals"][0]["url"], text
        assert "asked once the earlier call of fixture.remove is answered" in text, text
        answer_page(first["approvals"][0]["url"], "approve", "call")
        result, text = await resumed(connected, first)
        assert result.structured_content["result"] == "removed one", text
        second = waiting_of(*await resumed(connected, queued))
        assert second["approvals"][0]["url"] != first["approvals"][0]["url"], second
        answer_page(second["approvals"][0]["url"], "approve", "call")
        result, text = await resumed(connected, second)
        assert result.structured_content["result"] == "removed two", text

        # A used "resume", and one that is not toolweave's, are refused naming what to do.
        result, text = await resumed(connected, waiting)
        assert result.is_error and "the execution it names is no longer paused here" in text, text
        result, text = await execute(connected, "", resume="rs1.garbage")
        assert result.is_error, text
        assert 'its "resume" was not made by this toolweave process for this caller and tool' in text, text


def settings_file(folder: str) -> str:
    path = os.path.join(folder, "settings.json")
    with open(path, "w") as file:
        json.dump({"identities": {"alice": {"tokenEnv": "TW_ALICE_TOKEN"}, "bob": {"tokenEnv": "TW_BOB_TOKEN"}}}, file)
    return path


def session_of(result, text: str) -> str:
    session = result.structured_content["session"]
    assert f'Session: {session} (pass it as "session" to execute_code' in text, text
    return session


async def value(connected: Client, code: str, session: str):
    """The value of `code` run in `session`, and the session's handle in the answer."""
    result, text = await execute(connected, code, session=session)
    assert not result.is_error, text
    return result.structured_content["result"], session_of(result, text)


async def handles_over_http(binary: str, config: str, mode: str) -> None:
    flags = ["--approval-timeout-ms", "60000", "--session-ttl-ms", str(SESSION_TTL_MS)]
    if mode == "legacy":
        flags.append("--stateless")
    os.environ["TW_ALICE_TOKEN"] = ALICE
    os.environ["TW_BOB_TOKEN"] = BOB
    with tempfile.TemporaryDirectory() as folder, serving_http(binary, config, "--settings", settings_file(folder), *flags) as url:
        async with client(with_token(url, ALICE), mode) as alice, client(with_token(url, BOB), mode) as bob:
            # The store, across executions.
            result, text = await execute(alice, 'await store.set("plan", { step: 2 }); return "kept"')
            assert not result.is_error, text
            session = session_of(result, text)
            plan, session = await value(alice, 'return await store.get("plan")', session)
            assert plan == {"step": 2}, plan
            # Without the handle, another session, which keeps nothing of this one's.
            result, text = await execute(alice, 'return await store.get("plan")')
            assert result.structured_content["result"] is None, text
            assert session_of(result, text) != session

            # A result handle, read back in the next execution.
            kept, session = await value(alice, "return (await handle([1, 2, 3])).handle", session)
            read, session = await value(alice, f'return await results.get("{kept}")', session)
            assert read == [1, 2, 3], read

            # An approval for the rest of the session answers the next execution's call.
            result, text = await execute(alice, remove("a"), session=session)
            waiting = waiting_of(result, text)
            answer_page(waiting["approvals"][0]["url"], "approve", "session")
            result, text = await resumed(alice, waiting)
            assert result.structured_content["result"] == "removed a", text
            session = session_of(result, text)
            removed, session = await value(alice, remove("b"), session)
            assert removed == "removed b", removed
            # Another session was approved nothing.
            result, text = await execute(alice, remove("c"))
            waiting = waiting_of(result, text)
            answer_page(waiting["approvals"][0]["url"], "deny", "call")
            result, text = await resumed(alice, waiting)
            assert "the person asked declined this call" in result.structured_content["result"], text

            # Another identity's handle, and one that is not toolweave's, are refused.
            for who, handle in ((bob, session), (alice, "rs1.garbage")):
                result, text = await execute(who, 'return await store.get("plan")', session=handle)
                assert result.is_error, text
                assert '"session" is not a session handle this toolweave made for this caller' in text, text
                assert 'leave "session" out to start a new session' in text, text

            # Unused for longer than --session-ttl-ms, a session is forgotten.
            await asyncio.sleep(SESSION_TTL_MS / 1000 + 1)
            result, text = await execute(alice, 'return await store.get("plan")', session=session)
            assert result.is_error, text
            assert f'"session" has expired: a session unused for {SESSION_TTL_MS // 1000} s (--session-ttl-ms {SESSION_TTL_MS}) is forgotten' in text, text


async def main(binary: str, config: str, mode: str) -> None:
    assert mode in ("default", "legacy"), mode
    await early_answer_over_stdio(binary, config, mode)
    await handles_over_http(binary, config, mode)


if __name__ == "__main__":
    run_script("sdk_handles", main)
