// By original name on another server, the advice names that server's tool.
// expect-error: GuestError
// expect-message: alpha.remove was not called: its server marks it destructive
// expect-message: --approve alpha.remove
const removed: unknown = await callMCPTool("mcp__alpha__remove", { name: "draft" });
return removed;
