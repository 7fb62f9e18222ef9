// callMCPTool takes the original server and tool names, dashes and dots included.
// expect: ["3","dotted.name","dash-name"]
const sum = await callMCPTool("mcp__fixture__get-sum", { a: 1, b: 2 });
const dotted = await callMCPTool("mcp__fixture__dotted.name", {});
const dashed = await callMCPTool("mcp__fixture__dash-name", {});
[sum, dotted, dashed]
