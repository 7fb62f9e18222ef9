# The model calls a tool its server marks destructive, through a client that cannot be asked to
# approve it: the answer names the cause and the one rule that admits just that tool.
# expect-error: GuestError
# expect-message: fixture.remove was not called: its server marks it destructive, so each call needs approval
# expect-message: this MCP client cannot be asked (it does not support form elicitation
# expect-message: --approve fixture.remove
await tools.fixture.remove(name="draft")
