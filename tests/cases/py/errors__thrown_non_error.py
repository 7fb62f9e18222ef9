# Only exceptions can be raised; anything else is a TypeError at the raise.
# expect-error: GuestError
# expect-message: TypeError
# expect-message: File "main.py", line 5, in <module>
raise 42
