# __builtins__ (and with it the real import machinery) is not reachable.
# expect-error: GuestError
# expect-message: NameError
# expect-message: __builtins__
__builtins__["open"]("/etc/passwd").read()
