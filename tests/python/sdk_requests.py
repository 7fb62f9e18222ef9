#!/usr/bin/env python3
"""Requests from an upstream server reach the official MCP Python SDK client through toolweave.

Usage: sdk_requests.py TOOLWEAVE_BINARY CONFIG
CONFIG fronts server-everything as "everything". Guest code calls its trigger-elicitation-request,
trigger-sampling-request and get-roots-list; each request the server makes reaches this client's
callbacks, and their answers come back in the tool results. describe_tools shows the server's
instructions, and a roots change this client announces reaches the server.
Exits 0 and prints "sdk_requests: ok" when every check passes; prints the failure and exits 1 otherwise.
"""
import asyncio
import json

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from session import run_script, text_of

CODE = """
const elicited = await tools.everything.trigger_elicitation_request({});
const sampled = await tools.everything.trigger_sampling_request({ prompt: "What is 2 + 2?", maxTokens: 20 });
const roots = await tools.everything.get_roots_list({});
return JSON.stringify({ elicited, sampled, roots });
"""

ROOTS_ONLY = "return JSON.stringify(await tools.everything.get_roots_list({}))"


class Person:
    """The person and the model at the client: answers each callback and keeps what was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.prompts: list[str] = []
        self.root = "file:///work/project-one"

    async def elicit(self, context, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Grace Hopper", "check": True})

    async def sample(self, context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.prompts.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Four, said the test model."),
            model="toolweave-test-model",
            stop_reason="endTurn",
        )

    async def roots(self, context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=self.root, name="project")])


async def main(binary: str, config: str) -> None:
    person = Person()
    params = StdioServerParameters(command=binary, args=["serve", "--config", config])
    async with Client(
        params,
        mode="legacy",
        read_timeout_seconds=60,
        elicitation_callback=person.elicit,
        sampling_callback=person.sample,
        list_roots_callback=person.roots,
    ) as client:
        result = await client.call_tool("execute_code", {"code": CODE})
        text = text_of(result)
        assert not result.is_error, text
        answers = json.dumps(result.structured_content["result"])

        assert len(person.asked) == 1, person.asked
        assert person.asked[0].startswith("[everything] Please provide inputs"), person.asked
        assert "Grace Hopper" in answers, answers

        assert len(person.prompts) == 1 and "What is 2 + 2?" in person.prompts[0], person.prompts
        assert "Four, said the test model." in answers, answers
        assert "toolweave-test-model" in answers, answers

        assert "file:///work/project-one" in answers, answers

        described = await client.call_tool("describe_tools", {"names": ["everything"]})
        described_text = text_of(described)
        assert described_text.startswith(
            'Instructions from server "everything":\n# Everything Server'
        ), described_text[:300]
        assert "trigger_elicitation_request" in described_text, described_text[:300]

        # The client's roots change: server-everything asks again once told, and sees the new ones.
        person.root = "file:///work/project-two"
        await client.session.send_roots_list_changed()
        seen = ""
        for _ in range(100):
            result = await client.call_tool("execute_code", {"code": ROOTS_ONLY})
            seen = json.dumps(result.structured_content.get("result"))
            if "project-two" in seen:
                break
            await asyncio.sleep(0.1)
        assert "file:///work/project-two" in seen, seen


if __name__ == "__main__":
    run_script("sdk_requests", main)
