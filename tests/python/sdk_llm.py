#!/usr/bin/env python3
"""Guest code asks the model's LLM through toolweave, and the official MCP Python SDK client's
sampling callback answers, over stdio and over streamable HTTP, with worker isolation.

Usage: sdk_llm.py TOOLWEAVE_BINARY CONFIG AUDIT_LOG
Checks that llm.ask and llm.think (JavaScript and Python) reach the client's sampling callback
with the prompt, system prompt and maxTokens code gave, and that code gets the answer; that the
11th round of one execution is refused naming --max-llm-rounds while rounds 1-10 are answered;
that a request asking more tokens than are left is refused naming --max-llm-tokens; that an execution
that ends while the client's model works cancels the request at the client; that a client
that did not declare sampling gets an error naming that and the settings' "llm"; and that the
audit log records each request's hashes and sizes, not its text.
Exits 0 and prints "sdk_llm: ok" when every check passes; prints the failure and exits 1 otherwise.
"""
import asyncio
import hashlib
import json

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters
from session import run_script, serving_http, text_of


class Model:
    """The client's model: answers each sampling request and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[types.CreateMessageRequestParams] = []
        self.cancelled = 0

    async def sample(self, context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append(params)
        last = params.messages[-1].content.text
        if last == "Take your time.":
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"answer {len(self.asked)} to {last}"),
            model="toolweave-test-model",
            stop_reason="endTurn",
        )


async def value(client, code: str, **arguments):
    result = await client.call_tool("execute_code", {"code": code, **arguments})
    assert not result.is_error, text_of(result)
    return result.structured_content["result"]


ELEVEN_ROUNDS = """
const answers = [];
for (let round = 1; round <= 11; round++) {
  try {
    answers.push(await llm.ask(`round ${round}`, { maxTokens: 10 }));
  } catch (error) {
    answers.push("refused: " + error.message);
  }
}
return answers;
"""


async def sampling_checks(client, model: Model) -> None:
    answer = await value(client, 'return await llm.ask("What is 2 + 2?", { system: "Answer in one word.", maxTokens: 50 })')
    asked = model.asked[-1]
    assert asked.messages[0].content.text == "What is 2 + 2?", asked
    assert asked.messages[0].role == "user", asked
    assert asked.system_prompt == "Answer in one word.", asked
    assert asked.max_tokens == 50, asked
    assert answer == f"answer {len(model.asked)} to What is 2 + 2?", answer

    answer = await value(client, 'await llm.ask("What is 3 + 3?", system="Be brief.", max_tokens=20)', language="python")
    asked = model.asked[-1]
    assert (asked.messages[0].content.text, asked.system_prompt, asked.max_tokens) == ("What is 3 + 3?", "Be brief.", 20), asked
    assert answer.endswith("to What is 3 + 3?"), answer

    thought = await value(client, """return await llm.think({
      messages: [{ role: "user", content: "Name a colour." }, { role: "assistant", content: "Red." }, { role: "user", content: "Another." }],
    })""")
    asked = model.asked[-1]
    assert [(m.role, m.content.text) for m in asked.messages] == [("user", "Name a colour."), ("assistant", "Red."), ("user", "Another.")], asked
    assert asked.max_tokens == 1024 and asked.system_prompt is None, asked
    assert thought == {"text": f"answer {len(model.asked)} to Another.", "model": "toolweave-test-model", "stopReason": "endTurn"}, thought

    before = len(model.asked)
    answers = await value(client, ELEVEN_ROUNDS)
    assert len(model.asked) == before + 10, len(model.asked) - before
    for round in range(10):
        assert answers[round] == f"answer {before + round + 1} to round {round + 1}", answers
    assert answers[10] == (
        "refused: llm.ask: this execution has asked the LLM 10 times, the most it may (--max-llm-rounds 10). "
        "Put more into one request (several questions in one prompt), or continue in another execution."
    ), answers[10]

    before = len(model.asked)
    refused = await value(client, """
      await llm.ask("first", { maxTokens: 15000 });
      try { await llm.ask("second", { maxTokens: 6000 }); return "answered"; } catch (error) { return error.message; }
    """)
    assert len(model.asked) == before + 1, "the refused request reached the client"
    assert refused == (
        "llm.ask: maxTokens 6000 is more than the 5000 tokens left of this execution's LLM budget "
        "(--max-llm-tokens 20000, the sum of the maxTokens its requests ask for). Ask for 5000 or fewer."
    ), refused

    # An execution that ends while the model thinks cancels the request at the client.
    result = await client.call_tool("execute_code", {"code": 'return await llm.ask("Take your time.")', "timeoutMs": 1000})
    assert result.is_error and "Timeout" in text_of(result), text_of(result)
    for _ in range(50):
        if model.cancelled == 1:
            break
        await asyncio.sleep(0.1)
    assert model.cancelled == 1, "the client's sampling request was not cancelled"


async def unsupported_check(client) -> None:
    message = await value(client, 'try { return await llm.ask("hello") } catch (error) { return error.message }')
    assert message.startswith("llm.ask: the MCP client did not declare sampling, so toolweave cannot ask its model."), message
    assert '"llm": {"kind": "anthropic" or "openai"' in message, message


def audit_checks(path: str) -> None:
    with open(path) as log:
        records = [json.loads(line) for line in log]
    requests = [request for record in records for request in record.get("llmRequests", [])]
    first = requests[0]
    prompt = json.dumps({"system": "Answer in one word.", "messages": [{"role": "user", "content": "What is 2 + 2?"}]}, separators=(",", ":"))
    assert first["promptSha256"] == hashlib.sha256(prompt.encode()).hexdigest(), (first, prompt)
    assert first["promptBytes"] == len(prompt), first
    assert first["function"] == "llm.ask" and first["via"] == "sampling" and first["outcome"] == "ok", first
    assert first["model"] == "toolweave-test-model" and first["maxTokens"] == 50, first
    assert first["answerBytes"] == len("answer 1 to What is 2 + 2?"), first
    assert "prompt" not in first and "answer" not in first, first
    outcomes = [request["outcome"] for request in requests]
    assert outcomes.count("refused") >= 2, outcomes


async def over_stdio(binary: str, config: str, audit: str) -> None:
    model = Model()
    params = StdioServerParameters(
        command=binary,
        args=["serve", "--config", config, "--isolation", "worker", "--audit-log", audit],
    )
    async with Client(params, mode="legacy", read_timeout_seconds=60, sampling_callback=model.sample) as client:
        await sampling_checks(client, model)
    audit_checks(audit)
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        await unsupported_check(client)


async def over_http(binary: str, config: str) -> None:
    with serving_http(binary, config, "--isolation", "worker") as url:
        model = Model()
        async with Client(url, mode="legacy", read_timeout_seconds=60, sampling_callback=model.sample) as client, \
                Client(url, mode="legacy", read_timeout_seconds=60) as without:
            await sampling_checks(client, model)
            await unsupported_check(without)


async def main(binary: str, config: str, audit: str) -> None:
    await over_stdio(binary, config, audit)
    await over_http(binary, config)


if __name__ == "__main__":
    run_script("sdk_llm", main)
