# call_tool takes the original server and tool names (mcp__server__tool), dashes and dots included,
# or guest names.
# expect: ["3","dotted.name","dash-name","10"]
total = await call_tool("mcp__fixture__get-sum", {"a": 1, "b": 2})
dotted = await call_tool("mcp__fixture__dotted.name", {})
dashed = await call_tool("mcp__fixture__dash-name")
guest = await call_tool("fixture.get_sum", args={"a": 4, "b": 6})
[total, dotted, dashed, guest]
