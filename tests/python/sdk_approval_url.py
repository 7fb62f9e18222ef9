#!/usr/bin/env python3
"""URL-mode elicitation: the official MCP Python SDK client is shown toolweave's approval page.

Usage: sdk_approval_url.py TOOLWEAVE_BINARY CONFIG RUNTIME_DIR CONFIG_HOME AUDIT_LOG
CONFIG fronts the fixture server as "fixture"; its `remove` tool is marked destructive, so a call
of it asks. toolweave runs with `--approval page`, and this client declares URL-mode elicitation
(the SDK declares form and URL modes once it has an elicitation callback), so each waiting call
reaches it as an `elicitation/create` in URL mode naming the page. Declining there denies the
call; accepting (after the person approved with `toolweave approve ID --yes`, as they would at
the page) lets the paused execution go on.
Exits 0 and prints "sdk_approval_url: ok" when every check passes; prints the failure and exits 1
otherwise.
"""
import asyncio
import json
import os

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from session import run_script


def remove(name: str) -> str:
    return (
        f"try {{ return await tools.fixture.remove({{ name: {json.dumps(name)} }}) }}"
        " catch (e) { return String(e) }"
    )


class Person:
    """The person at the client: declines the first page shown, approves the next."""

    def __init__(self, binary: str, env: dict[str, str]) -> None:
        self.binary = binary
        self.env = env
        self.shown: list[types.ElicitRequestURLParams] = []
        self.approved: list[str] = []
        # The page's answer lets the execution go on before this callback has returned.
        self.answered = asyncio.Event()
        self.notices: list[dict] = []

    async def log(self, params) -> None:
        if params.logger == "toolweave/approval":
            self.notices.append(params.data)

    async def elicit(self, context, params) -> types.ElicitResult:
        assert getattr(params, "mode", None) == "url", f"a form, not a page: {params!r}"
        self.shown.append(params)
        if len(self.shown) == 1:
            return types.ElicitResult(action="decline")
        answered = await asyncio.create_subprocess_exec(
            self.binary, "approve", params.elicitation_id, "--yes",
            env=self.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await answered.communicate()
        assert answered.returncode == 0, (out, err)
        self.approved.append(out.decode())
        self.answered.set()
        return types.ElicitResult(action="accept")


async def main(binary: str, config: str, runtime: str, config_home: str, audit: str) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": runtime, "XDG_CONFIG_HOME": config_home}
    person = Person(binary, env)
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--config", config, "--approval", "page", "--audit-log", audit],
        env=env,
    )
    async with Client(
        params,
        mode="legacy",
        read_timeout_seconds=60,
        elicitation_callback=person.elicit,
        logging_callback=person.log,
    ) as client:
        declined = await client.call_tool("execute_code", {"code": remove("draft-41")})
        declined_text = json.dumps(declined.structured_content.get("result"))
        assert "the person asked declined this call" in declined_text, declined_text
        page = person.shown[0]
        assert page.url.startswith("http://127.0.0.1:") and "/approval/" in page.url, page.url
        assert page.elicitation_id and page.elicitation_id in page.url, page
        assert "fixture.remove" in page.message, page.message
        # At the session's default level (info) the address also arrives as a warning.
        assert [notice["url"] for notice in person.notices] == [page.url], person.notices

        # A session that asked for errors only is not sent it; the page still works.
        await client.set_logging_level("error")

        approved = await client.call_tool("execute_code", {"code": remove("draft-42")})
        assert approved.structured_content.get("result") == "removed draft-42", approved
        assert len(person.shown) == 2, person.shown
        await asyncio.wait_for(person.answered.wait(), 30)
        assert "fixture.remove" in person.approved[0], person.approved
        assert len(person.notices) == 1, person.notices

    calls = [json.loads(line) for line in open(audit)]
    answers = [
        (call.get("approval"), call.get("approvalVia"))
        for record in calls
        for call in record.get("toolCalls", [])
    ]
    assert answers == [("declined", "elicitation"), ("approved", "terminal")], answers


if __name__ == "__main__":
    run_script("sdk_approval_url", main)
