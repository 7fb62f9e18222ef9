// A destructive tool called by its original name gets the same refusal and the same advice.
// expect-error: GuestError
// expect-message: fixture.remove was not called: its server marks it destructive
// expect-message: --approve fixture.remove
await callMCPTool("mcp__fixture__remove", { name: "draft" });
