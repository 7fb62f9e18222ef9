# Uncaught, a tool error ends the program at the line of the call.
# expect-error: GuestError
# expect-message: RuntimeError: fixture.fail returned an error: disk on fire
# expect-message: File "main.py", line 5, in <module>
await tools.fixture.fail(message="disk on fire")
