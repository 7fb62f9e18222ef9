# code-executor-mcp's call_mcp_tool(name, args), which models bring, is call_tool by its other name: it calls the tool.
# expect: {"sum":"7","original":"5"}
total = await call_mcp_tool("fixture.add", {"a": 3, "b": 4})
original = await call_mcp_tool("mcp__fixture__add", {"a": 2, "b": 3})
{"sum": total, "original": original}
