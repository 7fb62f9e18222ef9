// callMCPTool with the server misspelled in the mcp__ form: no such server, the servers listed, the tool that comes close.
// also-while-starting
// expect-error: GuestError
// expect-message: unknown tool "mcp__fixtur__echo": there is no server "fixtur"; did you mean fixture.echo
// expect-message: The servers are alpha, beta, fixture.
await callMCPTool("mcp__fixtur__echo", { message: "hi" });
