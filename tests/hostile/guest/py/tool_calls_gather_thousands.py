# Thousands of tool calls gathered at once stop at the budget of 50.
# expect-error: ToolCallLimit
# expect-message: --max-tool-calls 50
results = await asyncio.gather(*[tools.fixture.echo(message=str(i)) for i in range(5000)])
len(results)
