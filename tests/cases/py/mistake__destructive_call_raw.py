# Asking for the raw result does not get around approval.
# expect-error: GuestError
# expect-message: fixture.remove was not called: its server marks it destructive
# expect-message: --approve fixture.remove
await call_tool("fixture.remove", {"name": "draft"}, raw=True)
