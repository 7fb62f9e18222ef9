# An uncaught exception names its type, message, line and column in the code as written.
# expect-error: GuestError
# expect-message: ValueError: boom
# expect-message: at line 8, column 15
def check(retries):
    if retries > 0:
        # the line below is line 8
        raise ValueError("boom")


check(1)
