# Files, the environment and the network are not reachable: the only way out is a tool call.
# expect-error: GuestError
# expect-message: PermissionError: open() is not available
# expect-message: the only way out of the sandbox is a tool call
open("/etc/passwd").read()
