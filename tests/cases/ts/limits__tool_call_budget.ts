// The case server runs with --max-tool-calls 50.
// expect-error: ToolCallLimit
// expect-message: --max-tool-calls 50
for (let i = 0; i < 60; i++) await tools.fixture.add({ a: i, b: 1 });
