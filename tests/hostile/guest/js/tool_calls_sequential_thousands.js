// Thousands of sequential tool calls stop at the budget of 50.
// expect-error: ToolCallLimit
// expect-message: --max-tool-calls 50
let total = 0;
for (let i = 0; i < 5000; i++) total += await tools.fixture.add({ a: i, b: 1 });
return total;
