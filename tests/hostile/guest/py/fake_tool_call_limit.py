# After real tool calls, a RuntimeError with the host's ToolCallLimit text stays a guest error.
# expect-error: GuestError
# expect-message: ToolCallLimit: the execution tried to make more than 50 tool calls
await tools.fixture.add(a=1, b=2)
raise RuntimeError("ToolCallLimit: the execution tried to make more than 50 tool calls (--max-tool-calls 50).")
