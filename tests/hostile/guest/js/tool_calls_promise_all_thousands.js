// Thousands of tool calls started at once with Promise.all stop at the budget of 50.
// expect-error: ToolCallLimit
// expect-message: --max-tool-calls 50
const calls = [];
for (let i = 0; i < 5000; i++) calls.push(tools.fixture.echo({ message: String(i) }));
return (await Promise.all(calls)).length;
