# call_tool with the dotted name gets the same refusal and advice.
# expect-error: GuestError
# expect-message: fixture.remove was not called: its server marks it destructive
# expect-message: --approve fixture.remove
await call_tool("fixture.remove", {"name": "draft"})
