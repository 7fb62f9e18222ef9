# An uncaught exception is reported as a traceback in the lines of the code as written.
# expect-error: GuestError
# expect-message: ValueError: boom
# expect-message: File "main.py", line 9, in check
# expect-message: File "main.py", line 12, in <module>
def check(retries):
    if retries > 0:
        # the line below is line 9
        raise ValueError("boom")


check(1)
