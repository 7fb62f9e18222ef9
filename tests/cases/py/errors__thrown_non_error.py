# Only exceptions can be raised; anything else is a TypeError at the raise.
# expect-error: GuestError
# expect-message: TypeError
# expect-message: at line 5
raise 42
