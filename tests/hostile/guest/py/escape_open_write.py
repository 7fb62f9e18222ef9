# Writing a file with open() is refused like reading one.
# expect-error: GuestError
# expect-message: PermissionError: open() is not available
# expect-message: the only way out of the sandbox is a tool call
open("/tmp/toolweave-hostile-marker", "w").write("escaped")
