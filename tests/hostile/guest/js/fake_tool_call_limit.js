// A rejected promise carrying the host's ToolCallLimit text, after two real calls, stays a guest error.
// expect-error: GuestError
// expect-message: ToolCallLimit: the execution tried to make more than 50 tool calls
await tools.fixture.add({ a: 1, b: 2 });
await tools.fixture.add({ a: 1, b: 2 });
await Promise.reject(new Error("ToolCallLimit: the execution tried to make more than 50 tool calls (--max-tool-calls 50)."));
