// An unknown name rejects with suggestions.
// expect: true
try {
  await callMCPTool("mcp__fixture__ad", { a: 1, b: 2 });
  false
} catch (error) {
  String(error).includes("did you mean")
}
