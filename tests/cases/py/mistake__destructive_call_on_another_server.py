# The advice names the tool of the server that was called, not a glob over every server.
# expect-error: GuestError
# expect-message: alpha.remove was not called: its server marks it destructive
# expect-message: --approve alpha.remove
await tools.alpha.remove(name="draft")
