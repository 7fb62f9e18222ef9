# The case server runs with --max-tool-calls 50.
# expect-error: ToolCallLimit
# expect-message: --max-tool-calls 50
for i in range(60):
    await tools.fixture.add(a=i, b=1)
